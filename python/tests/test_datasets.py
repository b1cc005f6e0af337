"""Named datasets (wire.Dataset, wire.Round): index-range datasets trained by
Python trainers against the real master, an evaluation dataset run for two
rounds beside train, the order and resumption of range tasks, the
re-declaration of a dataset a master lost, and the Files helper."""

from __future__ import annotations

import glob
import json
import random
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

import pytest

import trainmaster
from conftest import binary, write_dataset
from test_progress import _Answers
from test_shuffle import _Recording
from trainmaster import (DEFAULT_DATASET, Client, Files, MasterError, NoDataset, Record, RoundRunning, recordio)
from trainmaster.position import Position
from trainmaster.tasks import is_range, task_indexes
from trainmaster.digest import Digest
from trainmaster.shuffle import shuffle

HERE = Path(__file__).resolve().parent

# The big job: 10,000,000 records in tasks of 1,000, two passes, two Python
# trainer processes.
BIG_RECORDS, BIG_PER_TASK, BIG_PASSES = 10_000_000, 1_000, 2


def _client(addr, **kwargs):
    return _Recording(addr, min_backoff=0.01, max_backoff=0.1, **kwargs)


def _each_once(counts: list, n: int) -> None:
    """Asserts that the bytearrays in counts (one per trainer, a byte an
    index) add up to every index of [0, n) exactly once, without a Python
    object per index: bytes of 0 or 1 added as big integers cannot carry."""
    assert all(len(c) == n for c in counts)
    for c in counts:
        assert max(c, default=0) <= 1, f"a trainer got index {c.index(max(c))} {max(c)} times"
    total = sum(int.from_bytes(c, "little") for c in counts)
    if total != int.from_bytes(b"\x01" * n, "little"):
        every = total.to_bytes(n + 1, "little")[:n]
        pytest.fail(f"not every index exactly once: first missing {every.find(0)}, first twice {every.find(2)}")


def _go_coverage(lines: list, passes: int, n: int, per_task: int) -> dict:
    """The indexes cmd/trainer -json consumed, a bytearray per pass, from
    its lines of one task each ({"pass", "task", "from", "records",
    "digest"}); and checks the digest of every 50th task against the
    digest of its indexes (8 bytes little-endian each, as cmd/trainer
    counts them)."""
    seen = {p: bytearray(n) for p in range(passes)}
    for line in lines:
        if "task" not in line:
            continue  # a pass's line
        start = line["task"] * per_task + line.get("from", 0)
        end = start + line["records"]
        span = seen[line["pass"]]
        span[start:end] = bytes(x + 1 for x in span[start:end]) if any(span[start:end]) else b"\x01" * (end - start)
        if line["task"] % 50 == 0:
            d = Digest()
            for i in range(start, end):
                d.add(i.to_bytes(8, "little"))
            assert str(d) == line["digest"], f"cmd/trainer's digest of {line}: want {d}"
    return seen


def test_go_and_python_trainers_train_every_index_of_ten_million_once_per_pass(tmp_path, master):
    _, addr = master("-log-level", "info")
    with Client(addr, dataset="big") as c:
        c.declare(records=BIG_RECORDS, records_per_task=BIG_PER_TASK, passes=BIG_PASSES)
        st = c.dataset_status()
        assert (st["Dataset"], st["Tasks"], st["Records"], st["Passes"]) == ("big", BIG_RECORDS // BIG_PER_TASK,
                                                                           BIG_RECORDS, BIG_PASSES)
    started = time.monotonic()
    trainers = [subprocess.Popen([sys.executable, str(HERE / "range_trainer.py"), addr, "big", str(BIG_RECORDS),
                                  str(BIG_PER_TASK), str(BIG_PASSES), str(tmp_path / f"seen-{t}"), f"trainer-{t}"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for t in range(2)]
    go_out = open(tmp_path / "go-trainer.json", "w+")  # a line a task: more than a pipe holds
    go = subprocess.Popen([binary("trainer"), "-addr", addr, "-dataset-name", "big", "-json", "-name", "go-trainer"],
                          stdout=go_out, stderr=subprocess.PIPE, text=True)
    results = []
    for p in trainers:
        out, err = p.communicate(timeout=240)
        assert p.returncode == 0, f"{p.args} exited {p.returncode}:\n{err}"
        results.append(json.loads(out.splitlines()[-1]))
    _, err = go.communicate(timeout=240)
    assert go.returncode == 0, f"cmd/trainer exited {go.returncode}:\n{err}"
    go_out.seek(0)
    go_lines = [json.loads(line) for line in go_out]
    go_out.close()
    go_tasks = sum(1 for line in go_lines if "task" in line)
    elapsed = time.monotonic() - started
    print(f"\n{BIG_RECORDS} records x {BIG_PASSES} passes, 2 Python trainers and 1 Go trainer: {elapsed:.1f} s; "
          f"{results}, Go {go_tasks} tasks")
    assert all(r["misplaced"] == 0 for r in results), results
    assert sum(r["tasks"] for r in results) + go_tasks == BIG_PASSES * BIG_RECORDS // BIG_PER_TASK
    assert all(r["tasks"] > 0 for r in results) and go_tasks > 0, f"a trainer trained nothing: {results}, Go {go_tasks}"
    go_seen = _go_coverage(go_lines, BIG_PASSES, BIG_RECORDS, BIG_PER_TASK)
    for p in range(BIG_PASSES):
        counts = [go_seen[p]]
        for t in range(2):
            path = tmp_path / f"seen-{t}.{p}"
            counts.append(path.read_bytes() if path.exists() else bytes(BIG_RECORDS))
        _each_once(counts, BIG_RECORDS)
    with Client(addr, dataset="big") as c:
        st = c.dataset_status()
    assert st["AllDone"] and st["Pass"] == st["Passes"] == BIG_PASSES
    # Once all passes are done there is no current pass: its counts are 0.
    assert (st["Todo"], st["Pending"], st["Failed"]) == (0, 0, 0)


def test_an_eval_dataset_runs_two_rounds_beside_train(tmp_path, master):
    pattern = write_dataset(tmp_path / "data", 1, 100)
    _, addr = master("-chunks-per-task", "3")
    train = _client(addr, name="trainer")
    train.report_dataset([pattern])
    ev = _client(addr, name="evaluator", dataset="eval")
    ev.declare(records=1000, records_per_task=100, passes=2)
    ev.declare(records=1000, records_per_task=100, passes=2)  # the same again: accepted, nothing changes
    with pytest.raises(MasterError, match="dataset already reported"):
        ev.declare(records=1001, records_per_task=100, passes=2)
    assert ev._calls.declared["eval"][1]["Records"] == 1000  # a declaration refused is not the one sent again
    st = ev.dataset_status()
    assert st["Dataset"] == "eval" and st["Datasets"] == ["eval", "train"] and st.get("Round", 0) == 0
    assert (st["Tasks"], st["Records"], st["Pass"], st["Passes"], st["AllDone"]) == (10, 1000, 0, 2, False)
    assert ev.start_round(0) == 0  # started by the declaration
    with pytest.raises(RoundRunning):
        ev.start_round(1)

    for rnd in range(2):
        if rnd:
            assert ev.start_round(1) == 1
            assert ev.start_round(1) == 1  # every evaluator may ask: it started once
            assert ev.start_round(0) == 1
            with pytest.raises(RoundRunning, match="round still running"):
                ev.start_round(2)
        seen = defaultdict(list)
        for r in ev.records():
            assert r.data is None
            task = ev.tasks[(r.pass_, r.task)]
            assert r.index == task.get("Start", 0) + r.position
            seen[r.pass_].append(r.index)
        # Round r runs the passes 2r and 2r+1: a report of an earlier round is stale.
        assert sorted(seen) == [2 * rnd, 2 * rnd + 1]
        for indexes in seen.values():
            assert sorted(indexes) == list(range(1000))
        st = ev.dataset_status()
        assert st.get("Round", 0) == rnd and st["AllDone"] and st["Pass"] == st["Passes"] == 2 * (rnd + 1)
    for task in ev.tasks.values():
        assert task["Dataset"] == "eval" and not task.get("Blocks") and is_range(task)
        assert task["End"] - task.get("Start", 0) == 100 and task.get("Start", 0) == task["Index"] * 100
    with pytest.raises(MasterError, match="round 3 cannot start before round 2"):
        ev.start_round(3)

    # Train was left alone meanwhile, and trains its files as before.
    st = train.status()
    assert st.get("Dataset", DEFAULT_DATASET) == DEFAULT_DATASET and st["Datasets"] == ["eval", "train"]
    assert (st["Pass"], st["Done"], st["AllDone"]) == (0, 0, False)
    got = [(r.data, r.index) for r in train.records()]
    assert [data for data, _ in got] == list(recordio.scan(pattern.replace("*", "00")))
    assert all(index is None for _, index in got)
    assert all("Dataset" not in t and t["Blocks"] for t in train.tasks.values())
    assert train.status()["AllDone"]
    assert ev.dataset_status()["AllDone"]
    train.close()
    ev.close()


def test_records_trains_the_dataset_named(tmp_path, master):
    pattern = write_dataset(tmp_path / "data", 1, 30)
    _, addr = master()
    with Client(addr, dataset="eval") as c:
        c.declare(records=300, records_per_task=50)
    # dataset (the files of train) is reported; dataset_name is trained.
    got = list(trainmaster.records(addr=addr, dataset=[pattern], dataset_name="eval", name="eval-trainer"))
    assert all(r.data is None for r in got)
    assert sorted(r.index for r in got) == list(range(300))
    with Client(addr) as c:
        st = c.status()
    assert st["DatasetReported"] and st["Datasets"] == ["eval", "train"] and st.get("Done", 0) == 0
    # By default, train: its records, with data.
    got = list(trainmaster.records(addr=addr))
    assert [r.data for r in got] == list(recordio.scan(pattern.replace("*", "00")))
    assert all(r.index is None for r in got)


def test_range_tasks_with_a_seed_yield_their_indexes_shuffled(master):
    _, addr = master("-shuffle-seed", "5")
    yielded = defaultdict(list)
    with _client(addr, dataset="shuffled") as c:
        c.declare(records=2050, records_per_task=100, passes=2)  # the last task holds 50
        for r in c.records():
            yielded[(r.pass_, r.task)].append((r.position, r.index))
    assert set(yielded) == set(c.tasks) and len(c.tasks) == 2 * 21
    shuffled = 0
    for key, task in c.tasks.items():
        assert task.get("Seed"), f"task {key} has no seed"
        start, end = task.get("Start", 0), task["End"]
        order = shuffle(end - start, task["Seed"])
        assert yielded[key] == [(i, start + order[i]) for i in range(end - start)], f"task {key}"
        assert task_indexes(task) == [start + i for i in order]
        shuffled += order != sorted(order)
        assert task["Seed"] != c.tasks[(1 - key[0], key[1])]["Seed"], f"task {key[1]} has one seed in both passes"
    assert shuffled >= len(c.tasks) - 1, f"only {shuffled} of {len(c.tasks)} tasks out of order"
    for p in range(2):
        assert sorted(i for (q, _), got in yielded.items() if q == p for _, i in got) == list(range(2050))


@pytest.mark.parametrize("seed", [0, 7], ids=["in-order", "shuffled"])
def test_a_range_task_resumes_from_its_from(master, seed):
    _, addr = master("-trainer-grace", "200ms", "-task-timeout-min", "5m", "-shuffle-seed", str(seed))
    first = _client(addr, name="first", dataset="eval", progress_interval=3600)
    first.declare(records=1000, records_per_task=1000)
    got = []
    for r in first.records():
        got.append((r.position, r.index))
        if len(got) == 123:
            break  # stops cleanly: the loop reports 123 records trained
    first.close()  # and goes away: its task comes back after the grace

    second = _client(addr, name="second", dataset="eval")
    got.extend((r.position, r.index) for r in second.records())
    second.close()
    (task1,), (task2,) = first.tasks.values(), second.tasks.values()
    assert task2.get("From") == 123 and task2["Epoch"] == 2
    assert task1.get("Seed", 0) == task2.get("Seed", 0) and bool(task1.get("Seed")) == bool(seed)
    assert [p for p, _ in got] == list(range(1000))
    assert [i for _, i in got] == task_indexes(task1)
    assert sorted(i for _, i in got) == list(range(1000))


def test_a_straggling_range_task_is_split_and_its_rest_trained_as_a_piece(master):
    # As test_stragglers, on a named, shuffled index-range dataset: 4 tasks
    # of 200 records; the fast trainer takes three, the slow one the last,
    # which the master cuts for the fast one once it is idle.
    proc, addr = master("-stragglers", "split", "-task-timeout-min", "5m", "-shuffle-seed", "3")
    fast = _client(addr, name="fast", dataset="eval", progress_interval=1)
    slow = _client(addr, name="slow", dataset="eval", progress_interval=1)
    fast.declare(records=800, records_per_task=200)
    seen = {"fast": [], "slow": []}
    errors = []
    slow_started = threading.Event()

    def train(name) -> None:
        client = fast if name == "fast" else slow
        try:
            for rec in client.records():
                seen[name].append(rec)
                if name == "slow":
                    slow_started.set()
                    time.sleep(0.03)  # about 33 records a second: a task takes 6 s
                elif len(seen["fast"]) == 1:  # holds its three tasks until the slow one trains the last
                    assert slow_started.wait(20), "the slow trainer did not start"
        except BaseException as e:  # noqa: BLE001 - reported by the test
            errors.append((name, e))
            slow_started.set()

    threads = {name: threading.Thread(target=train, args=(name,), daemon=True) for name in seen}
    try:
        threads["fast"].start()
        deadline = time.monotonic() + 10
        while fast.dataset_status()["Todo"] != 1:
            assert time.monotonic() < deadline, "the fast trainer did not take three tasks"
            time.sleep(0.02)
        threads["slow"].start()
        for t in threads.values():
            t.join(20)
        assert not any(t.is_alive() for t in threads.values()), "the trainers did not finish the pass"
    finally:
        fast.close()
        slow.close()
    assert not errors, errors
    split = proc.wait_for(r"straggler split: task (\d+) keeps its records up to (\d+), piece (\d+)", timeout=1)
    task, cut, piece_index = (int(g) for g in split.groups())
    (held,) = [t for t in slow.tasks.values() if t["Index"] == task]
    (piece,) = [t for t in fast.tasks.values() if t.get("Piece")]
    assert (piece["Index"], piece.get("Of", 0), piece["From"], piece["Dataset"]) == (piece_index, task, cut, "eval")
    assert (piece.get("Start", 0), piece["End"], piece["Seed"]) == (held.get("Start", 0), held["End"], held["Seed"])
    order = task_indexes(held)
    assert [(r.position, r.index) for r in seen["slow"]] == [(p, order[p]) for p in range(cut)]
    assert seen["slow"][-1].last
    rest = [r for r in seen["fast"] if r.task == task]
    assert [(r.position, r.index) for r in rest] == [(p, order[p]) for p in range(cut, 200)]
    assert sorted(r.index for r in seen["fast"] + seen["slow"]) == list(range(800))


def test_a_master_that_lost_the_dataset_gets_it_declared_again(master):
    # Two jobs on one etcd: the client's master moves from the first to the
    # second, which has never heard of the dataset.
    first, a = master()
    _, b = master("-namespace", "/other")
    where = [a]
    c = _client(lambda: where[0], name="t", dataset="eval")
    c.declare(records=50, records_per_task=10)
    assert c.get_task()["Dataset"] == "eval"
    where[0] = b
    first.stop()
    task = c.get_task()  # "dataset not reported": declared again, then a task
    assert task["Dataset"] == "eval" and task["Epoch"] == 1
    st = c.dataset_status()
    assert st["DatasetReported"] and st["Records"] == 50 and st["Datasets"] == ["eval"]
    c.close()
    # A dataset the client never declared is not made up.
    with _client(b, dataset="other") as other:
        with pytest.raises(NoDataset):
            other.get_task()
        with pytest.raises(NoDataset):
            other.start_round(1)
        st = other.dataset_status()
        assert st["Dataset"] == "other" and not st["DatasetReported"]


def test_files_map_a_range_dataset_onto_recordio_files(tmp_path, master):
    pattern = write_dataset(tmp_path / "data", 3, 100)
    paths = sorted(glob.glob(pattern))
    files = Files.from_recordio(paths)
    assert files.counts == (100, 100, 100) and files.records() == 300
    content = {p: list(recordio.scan(p)) for p in paths}
    _, addr = master()
    got = []
    with _client(addr, dataset="mapped") as c:
        c.declare(records=files.records(), records_per_task=70)  # tasks across files
        for r in c.records():
            path, i = files.locate(r.index)
            got.append(content[path][i])
        for task in c.tasks.values():
            spans = files.spans(task.get("Start", 0), task["End"])
            assert sum(to - fr for _, fr, to in spans) == task["End"] - task.get("Start", 0)
    assert got == [rec for p in paths for rec in content[p]]


# What the client sends, without a master.

class _Wire(Client):
    """A client whose calls are kept, not sent; answers what each method
    answers."""

    def __init__(self, **kwargs) -> None:
        super().__init__("127.0.0.1:1", name="w", **kwargs)
        self.sent = []

    def _call(self, method, arg, *, within=None):
        self.sent.append((method, arg))
        if method == "TaskProgress":
            return {"Report": 1}
        if method == "GetTask":
            return {"Index": 0, "Epoch": 1, "Pass": 0}
        return 1


def test_what_a_client_sends_names_its_dataset():
    ev = _Wire(dataset="eval")
    task = {"Index": 3, "Epoch": 1, "Pass": 2, "Dataset": "eval", "Start": 300, "End": 400}
    ev.get_task()
    ev.task_finished(task)
    ev.task_failed(task, "no")
    ev.task_progress(task, 5)
    ev.start_round(2)
    ev.dataset_status()
    ev.dataset_status("other")
    ident = {"Index": 3, "Epoch": 1, "Pass": 2, "Trainer": "w", "Dataset": "eval"}
    assert isinstance(ev.sent[0][1].pop("Ask"), int)  # every GetTask numbered (wire.Task.Ask)
    assert ev.sent == [
        ("GetTask", {"Trainer": "w", "Dataset": "eval"}),
        ("TaskFinished", ident),
        ("TaskFailed", {**ident, "Error": "no"}),
        ("TaskProgress", {**ident, "Done": 5}),
        ("StartRound", {"Dataset": "eval", "Round": 2}),
        ("DatasetStatus", "eval"),
        ("DatasetStatus", "other"),
    ]
    # Train is left unnamed, as before named datasets; a task names its own.
    train = _Wire()
    train.get_task()
    train.task_finished({"Index": 1, "Epoch": 1, "Pass": 0})
    train.task_progress({"Index": 1, "Epoch": 1, "Pass": 0, "Dataset": "eval"}, 2)
    train.start_round(1)
    assert isinstance(train.sent[0][1].pop("Ask"), int)
    assert train.sent == [
        ("GetTask", {"Trainer": "w"}),
        ("TaskFinished", {"Index": 1, "Epoch": 1, "Pass": 0, "Trainer": "w"}),
        ("TaskProgress", {"Index": 1, "Epoch": 1, "Pass": 0, "Trainer": "w", "Dataset": "eval", "Done": 2}),
        ("StartRound", {"Dataset": "train", "Round": 1}),
    ]
    with pytest.raises(TypeError):
        Client("127.0.0.1:1", dataset=["/data/*.recordio"])  # patterns are report_dataset's


def test_declare_sends_only_the_fields_given():
    c = _Wire(dataset="eval")
    c.declare(records=100, records_per_task=10)
    c.declare("files", patterns=("/d/*.rio",), chunks_per_task=0, passes=3)
    c.declare("eval", records=100, records_per_task=10, chunks_per_task=None, passes=0)
    assert c.sent == [
        ("DeclareDataset", {"Name": "eval", "Records": 100, "RecordsPerTask": 10}),
        ("DeclareDataset", {"Name": "files", "Patterns": ["/d/*.rio"], "Passes": 3}),
        ("DeclareDataset", {"Name": "eval", "Records": 100, "RecordsPerTask": 10}),
    ]


def test_declare_sends_endless_only_when_asked():
    c = _Wire(dataset="eval")
    c.declare(records=100, records_per_task=10, endless=True)
    c.declare(records=100, records_per_task=10, endless=False)
    assert c.sent == [
        ("DeclareDataset", {"Name": "eval", "Records": 100, "RecordsPerTask": 10, "Endless": True}),
        ("DeclareDataset", {"Name": "eval", "Records": 100, "RecordsPerTask": 10}),
    ]


def test_an_endless_dataset_runs_pass_after_pass_until_stopped(master):
    _, addr = master()
    with Client(addr, dataset="steps", name="stepper") as c:
        c.declare(records=30, records_per_task=10, endless=True)
        seen = defaultdict(list)
        for r in c.records():
            seen[r.pass_].append(r.index)
            if len(seen) > 4:
                break
        st = c.dataset_status()
    assert [sorted(seen[p]) for p in range(4)] == [list(range(30))] * 4
    assert st["Passes"] == 0 and not st["AllDone"] and st["Pass"] >= 4
    with Client(addr, dataset="steps") as c:
        with pytest.raises(MasterError, match="runs passes without end"):
            c.start_round(1)


class _Forgetful:
    """A connection to a master that forgets every dataset as soon as it is
    declared."""

    addr = "127.0.0.1:1"

    def __init__(self) -> None:
        self.calls = []

    def call(self, method, arg, **kwargs):
        self.calls.append(method)
        if method in ("DeclareDataset", "ReportDataset"):
            return 0
        raise NoDataset("dataset not reported: the job holds no dataset")

    def close(self) -> None:
        pass


@pytest.mark.parametrize("dataset, declare, how", [
    ("eval", lambda c: c.declare(records=10, records_per_task=5), "DeclareDataset"),
    ("train", lambda c: c.report_dataset(["/d/*"]), "ReportDataset"),
])
def test_the_dataset_is_declared_again_a_few_times_then_no_dataset(dataset, declare, how):
    conn = _Forgetful()
    c = Client("127.0.0.1:1", dataset=dataset)
    c._calls.conn = conn
    declare(c)
    with pytest.raises(NoDataset):
        c.start_round(1)
    assert conn.calls == [how] + ["StartRound", how] * 3 + ["StartRound"]
    # A call about another dataset declares nothing.
    conn.calls.clear()
    with pytest.raises(NoDataset):
        c.task_finished({"Index": 0, "Epoch": 1, "Pass": 0, "Dataset": "never"})
    assert conn.calls == ["TaskFinished"]


# Range tasks in the records() loop, without a master.

def test_task_indexes_and_is_range():
    assert task_indexes({"Index": 0, "End": 5}) == [0, 1, 2, 3, 4]  # Start 0 is omitted on the wire
    assert task_indexes({"Index": 3, "Start": 30, "End": 40, "Seed": 42}) == [30 + i for i in shuffle(10, 42)]
    with pytest.raises(ValueError, match=r"task 4: bad record range \[9, 3\)"):
        task_indexes({"Index": 4, "Start": 9, "End": 3})
    assert is_range({"Index": 0, "End": 5}) and is_range({"Index": 0, "Blocks": None, "Start": 5, "End": 9})
    assert not is_range({"Index": 0, "Blocks": [{"Path": "a", "Idx": 0, "Offset": 0, "NumRecords": 3}]})
    assert Record(b"x", 1, 0, True, 3).index is None  # a record of a file task, built as before


def test_a_range_task_is_yielded_as_indexes_from_its_from_to_its_to():
    position = Position(_Answers({"Report": 1, "To": 0}))
    task = {"Index": 2, "Pass": 1, "Start": 200, "End": 210, "From": 2, "To": 8}
    got = list(position.begin(task, task_indexes(task), True))
    assert got == [Record(None, 2, 1, i == 7, i, 200 + i) for i in range(2, 8)]
    assert not position.end()


def test_a_range_task_cut_or_dropped_while_yielded():
    answers = _Answers({"Report": 1, "To": 6})
    position = Position(answers)
    task = {"Index": 1, "Pass": 0, "End": 10, "Seed": 9}
    it = position.begin(task, task_indexes(task), True)
    got = [next(it) for _ in range(3)]
    position.report()  # learns the task ends at 6
    got.extend(it)
    order = shuffle(10, 9)
    assert [(r.position, r.index, r.last) for r in got] == [(i, order[i], i == 5) for i in range(6)]
    assert answers.sent == [3] and not position.end()
    # Superseded: the rest is dropped, and the task not reported finished.
    answers.reply = {"Report": 4, "To": 0}
    it = position.begin(task, task_indexes(task), True)
    got = [next(it) for _ in range(4)]
    position.report()
    assert list(it) == [] and answers.sent == [3, 4] and position.end()


# Files.

def test_files_locate_and_spans():
    files = Files(["a", "empty", "b", "c"], [3, 0, 2, 4])
    assert files.records() == 9 and files.paths == ("a", "empty", "b", "c") and files.counts == (3, 0, 2, 4)
    assert [files.locate(i) for i in range(9)] == [("a", 0), ("a", 1), ("a", 2), ("b", 0), ("b", 1),
                                                   ("c", 0), ("c", 1), ("c", 2), ("c", 3)]
    assert files.spans(0, 9) == [("a", 0, 3), ("b", 0, 2), ("c", 0, 4)]
    assert files.spans(2, 6) == [("a", 2, 3), ("b", 0, 2), ("c", 0, 1)]
    assert files.spans(3, 5) == [("b", 0, 2)]
    assert files.spans(4, 4) == [] and files.spans(9, 9) == []
    assert repr(files) == "Files(4 files, 9 records)"


def test_files_spans_agree_with_locate():
    rng = random.Random(3)
    counts = [rng.choice([0, 1, 2, 7, 30]) for _ in range(40)]
    files = Files([f"f{i}" for i in range(40)], counts)
    n = files.records()
    for _ in range(300):
        start = rng.randrange(n + 1)
        end = rng.randrange(start, n + 1)
        flat = [(path, i) for path, fr, to in files.spans(start, end) for i in range(fr, to)]
        assert flat == [files.locate(k) for k in range(start, end)], (start, end)


def test_files_errors_name_the_bad_index_or_file():
    files = Files(["a", "b"], [3, 2])
    with pytest.raises(IndexError, match=r"record index 5 is outside the dataset's 5 records \(indexes 0 to 4"):
        files.locate(5)
    with pytest.raises(IndexError, match="record index -1 is outside"):
        files.locate(-1)
    with pytest.raises(TypeError, match="record index 1.5 is not an integer"):
        files.locate(1.5)
    with pytest.raises(IndexError, match=r"record range \[2, 6\) is outside"):
        files.spans(2, 6)
    with pytest.raises(IndexError, match=r"record range \[3, 2\) is outside"):
        files.spans(3, 2)
    with pytest.raises(IndexError, match=r"record index 0 is outside the dataset's 0 records \(1 files, all empty\)"):
        Files(["e"], [0]).locate(0)
    with pytest.raises(ValueError, match="'b': -2 records"):
        Files(["a", "b"], [1, -2])
    with pytest.raises(TypeError, match="'b': record count '7' is not an integer"):
        Files(["a", "b"], [1, "7"])
    with pytest.raises(ValueError, match="'a' is listed twice"):
        Files(["a", "b", "a"], [1, 1, 1])
    with pytest.raises(ValueError, match="2 files but 3 record counts"):
        Files(["a", "b"], [1, 2, 3])
    with pytest.raises(recordio.RecordIOError):
        Files.from_recordio([__file__])
    assert Files([], []).records() == 0 and Files([], []).spans(0, 0) == []
