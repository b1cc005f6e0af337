"""The contract vectors of go/wire/testdata/contract.json, which go/wire and
go/client check the Go side against: the Python client's report codes,
error texts, limits, shuffle, the records its records() loop yields of a
task, and the plans of groups of ranks (shares, batch counts, batch sizes,
passes refused), checked against the same table, so that the clients
cannot drift."""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from conftest import ROOT, binary
from trainmaster import (AllDone, BadCheckpoint, BadGroup, CheckpointIncomplete, Client, MasterError, NoDataset, NoTask,
                         NotServing, PassOver, PassTooSmall, RankDone, RoundRunning, Unauthorized, UnknownCheckpoint)
from trainmaster import errors, recordio, wire
from trainmaster.shuffle import shuffle

CONTRACT = json.loads((ROOT / "go" / "wire" / "testdata" / "contract.json").read_text())


def _snake(name: str) -> str:
    """A Go name as a Python constant's: AlreadyDone -> ALREADY_DONE."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).upper()


def test_report_codes():
    want = {_snake(name): value for name, value in CONTRACT["reports"].items()}
    assert {code.name: code.value for code in wire.Report} == want
    assert wire.NOT_OURS == {wire.Report.ALREADY_DONE, wire.Report.STALE_PASS, wire.Report.SUPERSEDED}
    assert wire.HEARD == {wire.Report.RECORDED, wire.Report.TOO_SOON}


_RAISED = {"TextNoTask": NoTask, "TextAllDone": AllDone, "TextNoDataset": NoDataset, "TextNotServing": NotServing,
           "TextUnauthorized": Unauthorized, "TextRoundRunning": RoundRunning, "TextPassOver": PassOver,
           "TextRankDone": RankDone, "TextBadGroup": BadGroup, "TextPassTooSmall": PassTooSmall,
           "TextUnknownCheckpoint": UnknownCheckpoint, "TextCheckpointIncomplete": CheckpointIncomplete,
           "TextBadCheckpoint": BadCheckpoint}


@pytest.mark.parametrize("name", sorted(CONTRACT["texts"]))
def test_error_texts(name):
    text = CONTRACT["texts"][name]
    assert getattr(errors, _snake(name)) == text
    # The master answers the text with its reason after it.
    err = errors.from_text(f"{text}: because")
    assert type(err) is _RAISED[name] and str(err) == f"{text}: because"


def test_every_error_text_is_in_the_table():
    assert set(_RAISED) == set(CONTRACT["texts"])
    assert {n for n in dir(errors) if n.startswith("TEXT_")} == {_snake(n) for n in CONTRACT["texts"]}
    assert type(errors.from_text("something else")) is MasterError


def test_limits():
    limits = CONTRACT["limits"]
    assert (wire.DEFAULT_DATASET, wire.MAX_ERROR_BYTES, wire.MAX_TRAINER_NAME_BYTES, wire.DEFAULT_PROGRESS_INTERVAL,
            wire.MIN_PROGRESS_INTERVAL, wire.MAX_RANKS, wire.MAX_BATCH_SIZE, wire.MAX_CHECKPOINT_NAME_BYTES,
            wire.MAX_HELD) == (
        limits["DefaultDataset"], limits["MaxErrorBytes"], limits["MaxTrainerNameBytes"],
        limits["DefaultProgressIntervalSeconds"], limits["MinProgressIntervalSeconds"], limits["MaxRanks"],
        limits["MaxBatchSize"], limits["MaxCheckpointNameBytes"], limits["MaxHeld"])
    assert set(limits) == {"DefaultDataset", "MaxErrorBytes", "MaxTrainerNameBytes", "DefaultProgressIntervalSeconds",
                           "MinProgressIntervalSeconds", "MaxRanks", "MaxBatchSize", "MaxCheckpointNameBytes",
                           "MaxHeld"}, "a limit of the contract this test does not check"


@pytest.mark.parametrize("name,trainers,held", [("", 1, 0), ("x" * (wire.MAX_CHECKPOINT_NAME_BYTES + 1), 1, 0),
                                                ("é" * (wire.MAX_CHECKPOINT_NAME_BYTES // 2 + 1), 1, 0),
                                                ("step-40", 0, 0), ("step-40", wire.MAX_RANKS + 1, 0),
                                                ("step-40", 3, wire.MAX_HELD + 1)])
def test_a_checkpoint_outside_the_bounds_is_refused_before_it_is_sent(name, trainers, held):
    with pytest.raises(BadCheckpoint, match=f"^{errors.TEXT_BAD_CHECKPOINT}: "):
        wire.check_checkpoint(name, trainers, held)


def test_a_checkpoint_at_the_bounds_is_sent():
    wire.check_checkpoint("x" * wire.MAX_CHECKPOINT_NAME_BYTES, wire.MAX_RANKS, wire.MAX_HELD)
    wire.check_checkpoint("s", 1)
    wire.check_rewind(1, "r" * wire.MAX_CHECKPOINT_NAME_BYTES)
    for checkpoint_id, restart in ((0, "r"), (1, ""), (1, "r" * (wire.MAX_CHECKPOINT_NAME_BYTES + 1))):
        with pytest.raises(BadCheckpoint):
            wire.check_rewind(checkpoint_id, restart)


@pytest.mark.parametrize("vector", CONTRACT["shuffle"], ids=lambda v: f"n{v['n']}-seed{v['seed']}")
def test_shuffle(vector):
    assert shuffle(vector["n"], vector["seed"]) == vector["order"]


@pytest.mark.parametrize("vector", CONTRACT["get_task"], ids=lambda v: v["name"])
def test_get_task_argument(vector):
    c = Client("127.0.0.1:1", name="gpu7-4242")  # never connects
    sent = []
    c._call = lambda method, arg, within=None: sent.append((method, arg)) or {"Index": 0, "Epoch": 1, "Pass": 0}
    for _ in range(2):
        if vector.get("group") is not None:
            c.get_task(one_pass=vector["one_pass"], group=tuple(vector["group"]))
        elif vector["one_pass"] is None:
            c.get_task()
        else:
            c.get_task(one_pass=vector["one_pass"])
    # Each call carries an Ask of its own (wire.Task.Ask, which the vectors
    # leave out: its value is drawn): a number, one more at each call.
    asks = [arg.pop("Ask") for _, arg in sent]
    assert sent == [("GetTask", vector["arg"])] * 2
    assert all(isinstance(a, int) and 0 < a < 1 << 63 for a in asks) and asks[1] == asks[0] + 1, asks
    assert set(vector["arg"]) <= set(wire.Task.__annotations__), "a field of GetTask's argument that Task lacks"
    assert {"Gen", "Ask"} <= set(wire.Task.__annotations__)


def test_get_task_vectors_ask_as_a_rank():
    assert any(v.get("group") for v in CONTRACT["get_task"]), "no get_task vector of a group"


def _plan_id(v):
    return f"{v['records']}-records-{v['ranks']}-ranks-batch-{v['batch']}"


@pytest.mark.parametrize("vector", CONTRACT["group_plans"], ids=_plan_id)
def test_group_plans(vector):
    records, ranks, batch = vector["records"], vector["ranks"], vector["batch"]
    wire.check_pass(records, ranks, batch)  # accepted
    assert wire.group_batches(records, ranks, batch) == vector["batches"]
    shares = [wire.group_share(records, ranks, r) for r in range(ranks)]
    assert shares == vector["shares"] and sum(shares) == records
    assert [wire.batch_sizes(s, vector["batches"], batch) for s in shares] == vector["sizes"]
    for rank in range(ranks):
        wire.check_rank(rank, ranks, batch)


@pytest.mark.parametrize("vector", CONTRACT["group_refusals"], ids=_plan_id)
def test_group_refusals(vector):
    with pytest.raises(PassTooSmall, match=f"^{errors.TEXT_PASS_TOO_SMALL}: "):
        wire.check_pass(vector["records"], vector["ranks"], vector["batch"])


def test_the_group_vectors_are_there():
    assert CONTRACT["group_plans"] and CONTRACT["group_refusals"]


@pytest.mark.parametrize("rank,ranks,batch", [(3, 3, 32), (-1, 3, 32), (0, 0, 32), (0, wire.MAX_RANKS + 1, 32),
                                              (0, 2, 0), (0, 2, wire.MAX_BATCH_SIZE + 1)])
def test_check_rank_refuses_what_the_contract_bounds(rank, ranks, batch):
    with pytest.raises(BadGroup, match=f"^{errors.TEXT_BAD_GROUP}: "):
        wire.check_rank(rank, ranks, batch)
    wire.check_rank(0, min(max(ranks, 1), wire.MAX_RANKS), min(max(batch, 1), wire.MAX_BATCH_SIZE))


def test_batch_sizes_hold_for_every_pass_the_group_accepts():
    """wire.BatchSizes' promise (go/wire/group_test.go): every rank's
    batches the same in number, none empty, none over the batch size, only
    the last two smaller, adding up to the share."""
    for ranks in range(1, 10):
        for batch in range(1, 10):
            for records in range(0, 121):
                try:
                    wire.check_pass(records, ranks, batch)
                except PassTooSmall:
                    continue
                k = wire.group_batches(records, ranks, batch)
                for rank in range(ranks):
                    share = wire.group_share(records, ranks, rank)
                    sizes = wire.batch_sizes(share, k, batch)
                    assert sizes is not None and len(sizes) == k, (records, ranks, batch, rank)
                    assert sum(sizes) == share and all(1 <= n <= batch for n in sizes)
                    assert all(n == batch for n in sizes[:-2]), (records, ranks, batch, rank, sizes)


class _OneTask(Client):
    """A Client whose master has one task: handed out once, then all passes
    are done. It reads the task for real."""

    def __init__(self, task):
        super().__init__("127.0.0.1:1", progress_interval=0)  # never connects
        self.task, self.failed = task, []

    def get_task(self):
        task, self.task = self.task, None
        if task is None:
            raise AllDone("all passes done")
        return task

    def task_finished(self, task):
        return wire.Report.RECORDED

    def task_failed(self, task, reason):
        self.failed.append(reason)
        return wire.Report.RECORDED


@pytest.fixture(scope="module")
def contract_file(tmp_path_factory):
    """The RecordIO file of the position vectors, written by cmd/recordio,
    and its chunks."""
    f = CONTRACT["file"]
    records = [f["format"] % i for i in range(f["records"])]
    path = tmp_path_factory.mktemp("contract") / "contract.recordio"
    subprocess.run([binary("recordio"), "write", "-o", str(path), "-max-chunk-bytes",
                    str(f["per_chunk"] * len(records[0]))], input="".join(r + "\n" for r in records), text=True,
                   check=True)
    chunks = recordio.index(str(path))
    assert [h.records for h in chunks] == [min(f["per_chunk"], f["records"] - i)
                                           for i in range(0, f["records"], f["per_chunk"])]
    return str(path), chunks, {r.encode(): i for i, r in enumerate(records)}


@pytest.mark.parametrize("vector", CONTRACT["positions"], ids=lambda v: v["name"])
def test_positions(vector, contract_file):
    path, chunks, number = contract_file
    task = dict(vector["task"])
    if "chunks" in vector:
        first, end = vector["chunks"]
        task["Blocks"] = [{"Path": path, "Idx": h.index, "Offset": h.offset, "NumRecords": h.records}
                          for h in chunks[first:end]]
    c = _OneTask(task)
    got = list(c.records())
    c.close()
    assert c.failed == []
    assert {(r.task, r.pass_) for r in got} <= {(vector["root"], task["Pass"])}
    yielded = [[r.position, r.index if r.data is None else number[r.data], r.last] for r in got]
    assert yielded == vector["yield"]
