"""The contract vectors of go/wire/testdata/contract.json, which go/wire and
go/client check the Go side against: the Python client's report codes,
error texts, limits, shuffle and the records its records() loop yields of
a task, checked against the same table, so that the clients cannot drift."""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from conftest import ROOT, binary
from trainmaster import (AllDone, Client, MasterError, NoDataset, NoTask, NotServing, PassOver, RoundRunning,
                         Unauthorized)
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
           "TextUnauthorized": Unauthorized, "TextRoundRunning": RoundRunning, "TextPassOver": PassOver}


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
            wire.MIN_PROGRESS_INTERVAL) == (
        limits["DefaultDataset"], limits["MaxErrorBytes"], limits["MaxTrainerNameBytes"],
        limits["DefaultProgressIntervalSeconds"], limits["MinProgressIntervalSeconds"])


@pytest.mark.parametrize("vector", CONTRACT["shuffle"], ids=lambda v: f"n{v['n']}-seed{v['seed']}")
def test_shuffle(vector):
    assert shuffle(vector["n"], vector["seed"]) == vector["order"]


@pytest.mark.parametrize("vector", CONTRACT["get_task"], ids=lambda v: v["name"])
def test_get_task_argument(vector):
    c = Client("127.0.0.1:1", name="gpu7-4242")  # never connects
    sent = []
    c._call = lambda method, arg, within=None: sent.append((method, arg)) or {"Index": 0, "Epoch": 1, "Pass": 0}
    if vector["one_pass"] is None:
        c.get_task()
    else:
        c.get_task(one_pass=vector["one_pass"])
    assert sent == [("GetTask", vector["arg"])]


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
