"""The order of a task's records (wire.Task.Seed, the master's
-shuffle-seed): a task's records in the order go/wire.Shuffle draws (its
vectors are go/wire/testdata/contract.json's, test_contract.py), and a
records() loop against a real master with a seed."""

from __future__ import annotations

from collections import defaultdict

from conftest import write_dataset
from trainmaster import Client
from trainmaster.shuffle import shuffle
from trainmaster.tasks import in_training_order, read_task


def test_in_training_order():
    records = [b"r%d" % i for i in range(10)]
    assert in_training_order({"Index": 0}, records) is records  # no Seed: file order, no copy
    assert in_training_order({"Index": 0, "Seed": 0}, records) is records
    assert in_training_order({"Index": 0, "Seed": 42}, records) == [records[i] for i in shuffle(10, 42)]


class _Recording(Client):
    """A client that keeps every task the master hands it."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.tasks = {}

    def get_task(self):
        task = super().get_task()
        self.tasks[(task["Pass"], task["Index"])] = task
        return task


def test_records_of_a_seeded_task_come_shuffled(tmp_path, master):
    pattern = write_dataset(tmp_path / "data", 2, 100)
    _, addr = master("-shuffle-seed", "5", "-passes", "2", "-chunks-per-task", "3")
    yielded = defaultdict(list)
    with _Recording(addr) as c:
        c.report_dataset([pattern])
        for rec in c.records():
            yielded[(rec.pass_, rec.task)].append(rec.data)
    assert yielded and set(yielded) == set(c.tasks)
    shuffled = 0
    for key, task in c.tasks.items():
        assert task.get("Seed"), f"task {key} has no seed"
        in_file = read_task(task)
        assert yielded[key] == [in_file[i] for i in shuffle(len(in_file), task["Seed"])], f"task {key}"
        shuffled += yielded[key] != in_file
        other_pass = (1 - key[0], key[1])
        assert task["Seed"] != c.tasks[other_pass]["Seed"], f"task {key[1]} has one seed in both passes"
    assert shuffled >= len(c.tasks) - 1, f"only {shuffled} of {len(c.tasks)} tasks out of file order"
