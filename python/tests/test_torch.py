"""trainmaster.torch.TaskDataset: a linear regression trains for two passes
from a real master, with two DataLoader workers, each its own trainer; and
an index-range dataset, whose indexes go to the transform."""

from __future__ import annotations

import random
import subprocess
from collections import Counter

import pytest
import torch
from torch.utils.data import DataLoader

from conftest import binary
from trainmaster import Client
from trainmaster.torch import TaskDataset


def parse(record: bytes):
    i, x, y = record.split()
    return int(i), torch.tensor([float(x)]), torch.tensor([float(y)])


def test_linear_regression_over_two_passes(tmp_path, master):
    rng = random.Random(7)
    n = 2000
    lines = []
    for i in range(n):
        x = rng.uniform(-1, 1)
        lines.append(f"{i} {x:.6f} {3 * x + 1 + rng.gauss(0, 0.05):.6f}\n")
    path = tmp_path / "points.recordio"
    subprocess.run([binary("recordio"), "write", "-o", str(path), "-max-chunk-bytes", "2000"],
                   input="".join(lines), text=True, check=True)
    proc, addr = master("-passes", "2", "-chunks-per-task", "2")

    torch.manual_seed(0)
    model = torch.nn.Linear(1, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.2)
    loader = DataLoader(TaskDataset(addr=addr, dataset=[str(path)], transform=parse), batch_size=32, num_workers=2)
    seen, losses = Counter(), []
    for _epoch in range(2):  # one pass each
        for ids, x, y in loader:
            loss = torch.nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
            seen.update(ids.tolist())
    assert set(seen) == set(range(n)) and set(seen.values()) == {2}, "every record once per pass:\n" + "".join(l for l in proc.lines if "timed out" in l or "failed" in l or "pass" in l)[-3000:]
    first, last = sum(losses[:5]) / 5, sum(losses[-5:]) / 5
    assert last < first / 20, f"loss {first:.4f} at the start, {last:.4f} at the end"
    assert abs(model.weight.item() - 3) < 0.2 and abs(model.bias.item() - 1) < 0.2


def _example(index):
    """What a trainer of an index-range dataset does with a record: reads
    it from its own storage by its index (here, makes it up from it)."""
    assert isinstance(index, int), f"transform got {index!r}, not an index"
    return index, torch.tensor([float(index % 7)])


def test_an_index_range_dataset_yields_each_index_once_per_pass_to_the_transform(master):
    n, per_task, passes = 5000, 100, 2
    proc, addr = master()
    with Client(addr, dataset="eval") as c:
        c.declare(records=n, records_per_task=per_task, passes=passes)
    loader = DataLoader(TaskDataset(addr=addr, dataset_name="eval", transform=_example), batch_size=64, num_workers=2)
    seen = Counter()
    for _epoch in range(passes):  # one pass each
        for ids, x in loader:
            assert x.shape[1:] == (1,) and torch.equal(x[:, 0], (ids % 7).float())
            seen.update(ids.tolist())
    assert set(seen) == set(range(n)) and set(seen.values()) == {passes}, "every index once per pass:\n" + "".join(
        l for l in proc.lines if "timed out" in l or "failed" in l or "pass" in l)[-3000:]
    with Client(addr, dataset="eval") as c:
        st = c.dataset_status()
    assert st["Dataset"] == "eval" and st["AllDone"] and st["Pass"] == passes
    assert st["Datasets"] == ["eval"]  # train was neither reported nor trained


def test_a_dataset_name_that_is_no_name_is_refused():
    with pytest.raises(TypeError, match="dataset_name is a dataset's name"):
        TaskDataset(addr="127.0.0.1:1", dataset_name=["/data/*.recordio"])


def test_each_iteration_of_the_loader_is_one_pass(master):
    """With two DataLoader workers, each a trainer: the first `for` yields
    every record of pass 0 once and nothing of pass 1, the second pass 1,
    a third nothing; per_pass=False yields every pass in one."""
    n, per_task, passes = 3000, 50, 2
    proc, addr = master()
    with Client(addr, dataset="eval") as c:
        c.declare(records=n, records_per_task=per_task, passes=passes)
    loader = DataLoader(TaskDataset(addr=addr, dataset_name="eval"), batch_size=64, num_workers=2)
    for epoch in range(passes):
        seen = Counter(i for batch in loader for i in batch.tolist())
        assert set(seen) == set(range(n)) and set(seen.values()) == {1}, f"epoch {epoch}: not every index once"
        with Client(addr, dataset="eval") as c:
            assert c.dataset_status().get("Pass", 0) == epoch + 1
    assert [batch for batch in loader] == []  # every pass is done

    with Client(addr, dataset="all") as c:
        c.declare(records=n, records_per_task=per_task, passes=passes)
    loader = DataLoader(TaskDataset(addr=addr, dataset_name="all", per_pass=False), batch_size=64, num_workers=2)
    seen = Counter(i for batch in loader for i in batch.tolist())
    assert set(seen) == set(range(n)) and set(seen.values()) == {passes}


@pytest.mark.parametrize("workers,persistent", [(2, False), (2, True), (0, False)])
def test_a_worker_started_late_yields_nothing_of_the_next_pass(master, workers, persistent):
    """A pass of one task, two workers: the first to ask takes the task
    and ends the pass at once; the other, asking after, must not train the
    next pass in this epoch. Persistent workers iterate again each epoch;
    without workers the main process iterates."""
    n, passes = 100, 3
    proc, addr = master()
    with Client(addr, dataset="eval") as c:
        c.declare(records=n, records_per_task=n, passes=passes)
    loader = DataLoader(TaskDataset(addr=addr, dataset_name="eval"), batch_size=64, num_workers=workers,
                        persistent_workers=persistent)
    for epoch in range(passes):
        seen = Counter(i for batch in loader for i in batch.tolist())
        assert set(seen) == set(range(n)) and set(seen.values()) == {1}, f"epoch {epoch}: {sum(seen.values())} indexes"
    assert [batch for batch in loader] == []
