"""The trainer's name (wire.Task.Trainer) reaches the master with every task
a trainer sends: a fake JSON-RPC master on loopback records what it gets.
No binaries needed."""

from __future__ import annotations

import json
import os
import re
import socket
import socketserver
import subprocess
import sys
import threading
from typing import Any, Dict, List, Tuple

import pytest

from conftest import ROOT
from trainmaster import Client, records
from trainmaster.client import MAX_TRAINER_NAME_BYTES

# Task 0 names a file that does not exist (the trainer reports it failed),
# task 1 holds no records (the trainer reports it finished); then all is done.
TASKS = [
    {"Index": 0, "Epoch": 1, "Pass": 0, "Error": "", "Trainer": "",
     "Blocks": [{"Path": "/nonexistent/part-000.recordio", "Idx": 0, "Offset": 0, "NumRecords": 1}]},
    {"Index": 1, "Epoch": 1, "Pass": 0, "Error": "", "Trainer": "", "Blocks": []},
]


class FakeMaster(socketserver.ThreadingTCPServer):
    """Answers JSON-RPC calls as the master would for TASKS, and records
    (method, argument) of every call."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.calls: List[Tuple[str, Any]] = []
        self.mu = threading.Lock()
        self.next_task = 0

    def answer(self, method: str, arg: Any) -> Tuple[Any, Any]:
        with self.mu:
            self.calls.append((method, arg))
            if method == "DatasetStatus":
                return {}, None  # pass 0 of train (the master omits the fields that are zero)
            if method != "GetTask":
                return 1, None
            if self.next_task == len(TASKS):
                return None, "all passes done"
            self.next_task += 1
            return TASKS[self.next_task - 1], None


class _Handler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        for line in self.rfile:
            req = json.loads(line)
            result, error = self.server.answer(req["method"].partition(".")[2], req["params"][0])
            self.wfile.write(json.dumps({"id": req["id"], "result": result, "error": error}).encode() + b"\n")


@pytest.fixture
def fake_master():
    m = FakeMaster()
    threading.Thread(target=m.serve_forever, daemon=True).start()
    yield m
    m.shutdown()
    m.server_close()


def addr(m: FakeMaster) -> str:
    return "%s:%d" % m.server_address


def names(m: FakeMaster) -> Dict[str, List[Any]]:
    """The Trainer field of each task the master got, by method."""
    got: Dict[str, List[Any]] = {}
    for method, arg in m.calls:
        if method in ("GetTask", "TaskFinished", "TaskFailed"):
            got.setdefault(method, []).append(arg.get("Trainer"))
    return got


LONG = "x" + "é" * MAX_TRAINER_NAME_BYTES  # 2 bytes a character: byte 128 is inside one


@pytest.mark.parametrize("name,want", [
    (None, re.compile(rf"{re.escape(socket.gethostname())}-{os.getpid()}-[0-9a-f]{{4}}")),
    ("gpu7/worker 3", "gpu7/worker 3"),
    (LONG, LONG[:MAX_TRAINER_NAME_BYTES // 2]),  # "x" and 63 "é": 127 bytes
], ids=["default", "set", "too long"])
def test_name_on_every_call(fake_master, name, want):
    with Client(addr(fake_master), name=name) as c:
        task = c.get_task()
        c.task_finished(task)
        c.task_failed(task, "disk on fire")
        if not isinstance(want, str):
            assert want.fullmatch(c.name), c.name
            want = c.name
    assert names(fake_master) == {"GetTask": [want], "TaskFinished": [want], "TaskFailed": [want]}
    get = dict(fake_master.calls[0][1])
    assert isinstance(get.pop("Ask"), int)  # every GetTask numbered (wire.Task.Ask)
    assert get == {"Trainer": want}, "GetTask's zero task carries the name"
    assert fake_master.calls[1][1] == {"Index": 0, "Epoch": 1, "Pass": 0, "Trainer": want}, "a report carries no blocks"


def _via_records(m: FakeMaster, name: str) -> None:
    assert list(records(addr=addr(m), name=name)) == []


def _via_torch(m: FakeMaster, name: str) -> None:
    pytest.importorskip("torch")
    from trainmaster.torch import TaskDataset
    assert list(TaskDataset(addr=addr(m), name=name)) == []


def _via_command(m: FakeMaster, name: str) -> None:
    p = subprocess.run([sys.executable, "-m", "trainmaster", "train", "--addr", addr(m), "--name", name],
                       capture_output=True, text=True, timeout=60, cwd=ROOT / "python")
    assert p.returncode == 0, p.stderr


@pytest.mark.parametrize("run", [_via_records, _via_torch, _via_command], ids=["records", "torch", "command"])
def test_name_of_a_records_loop(fake_master, run):
    """A loop's fetches, its failure report (task 0) and its finish (task 1)."""
    run(fake_master, "trainer-7")
    assert names(fake_master) == {"GetTask": ["trainer-7"] * 3, "TaskFinished": ["trainer-7"],
                                  "TaskFailed": ["trainer-7"]}
