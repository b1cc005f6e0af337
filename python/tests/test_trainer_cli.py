"""python -m trainmaster train's accounting, against a scripted stand-in
for Client: a task counts once its last record is consumed, a dropped one
does not, and each task's line says where it started; a record of an
index-range dataset counts as its index. And against the real master, with
cmd/trainer: the per-pass digests of a Go and a Python trainer of a named
index-range dataset add up to the digest of all its indexes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

from conftest import ROOT, binary
from trainmaster import Client, Digest, Record
from trainmaster import __main__ as cli


def _data(task, position):
    return b"t%d r%d" % (task, position)


def _run(monkeypatch, capsys, script, *args, ranged=False, client_kwargs=None):
    """Runs train --json (and args) with records() yielding script: (pass,
    task, positions, last) runs, last marking the run's final record; with
    ranged, records of an index-range dataset (no data, index 1000 * task
    + position). client_kwargs, if given, is updated with the keywords the
    Client was made with."""

    class StandIn:
        def __init__(self, *args, **kwargs):
            if client_kwargs is not None:
                client_kwargs.update(kwargs)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            pass

        def records(self):
            for pass_, task, positions, last in script:
                for p in positions:
                    if ranged:
                        yield Record(None, task, pass_, last and p == positions[-1], p, 1000 * task + p)
                    else:
                        yield Record(_data(task, p), task, pass_, last and p == positions[-1], p)

    monkeypatch.setattr(cli, "Client", StandIn)
    assert cli.main(["train", "--addr", "127.0.0.1:1", "--json", *args]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def _line(pass_, task, positions):
    d = Digest()
    for p in positions:
        d.add(_data(task, p))
    return {"pass": pass_, "task": task, "from": positions[0], "records": d.records, "bytes": d.bytes,
            "digest": str(d)}


def test_dropped_dispatches_are_not_counted_and_lines_start_at_their_first_record(monkeypatch, capsys):
    script = [
        (0, 1, range(0, 3), False),  # dropped: another trainer has it
        (0, 2, range(0, 4), True),
        (0, 1, range(3, 5), True),  # task 1 again, resumed at 3
        (0, 5, range(0, 2), True),  # cut short at 2, learned in time
        (0, 5, range(2, 5), True),  # its rest, a piece of task 5, here too: a line of its own
        (1, 2, range(0, 2), False),  # dropped
        # Task 2 again right after, from where the dropped dispatch stopped:
        # nothing tells them apart (as in cmd/trainer), one line from 0.
        (1, 2, range(2, 4), True),
        (1, 3, range(1, 3), False),  # dropped at the end
    ]
    lines = _run(monkeypatch, capsys, script)
    tasks = [_line(0, 2, range(0, 4)), _line(0, 1, range(3, 5)), _line(0, 5, range(0, 2)), _line(0, 5, range(2, 5)),
             _line(1, 2, range(0, 4))]
    assert lines[:-2] == tasks
    for pass_, line in zip((0, 1), lines[-2:]):
        total = Digest()
        for t in tasks:
            if t["pass"] == pass_:
                total.combine(Digest(t["records"], t["bytes"], int(t["digest"], 16)))
        assert line == {"pass": pass_, "records": total.records, "bytes": total.bytes, "digest": str(total)}


def test_a_record_of_an_index_range_dataset_counts_as_its_index(monkeypatch, capsys):
    script = [(0, 3, range(0, 4), True), (0, 7, range(2, 5), True), (1, 3, range(0, 2), False)]
    made = {}
    lines = _run(monkeypatch, capsys, script, "--dataset-name", "eval", ranged=True, client_kwargs=made)
    assert made["dataset"] == "eval"
    want = []
    for task, positions in ((3, range(0, 4)), (7, range(2, 5))):
        d = Digest()
        for p in positions:
            # cmd/trainer: binary.LittleEndian.AppendUint64(nil, uint64(rec.Index))
            d.add((1000 * task + p).to_bytes(8, "little"))
        want.append({"pass": 0, "task": task, "from": positions[0], "records": d.records, "bytes": d.bytes,
                     "digest": str(d)})
    total = Digest()
    for w in want:
        total.combine(Digest(w["records"], w["bytes"], int(w["digest"], 16)))
    assert lines == want + [{"pass": 0, "records": 7, "bytes": 56, "digest": str(total)}]
    # Without --dataset-name: train.
    made.clear()
    _run(monkeypatch, capsys, [], client_kwargs=made)
    assert made["dataset"] == "train"


PASS_LINE = re.compile(r"^pass (\d+): (\d+) records, (\d+) bytes, digest ([0-9a-f]{16})$")


def _passes(out: str) -> dict:
    """The per-pass lines of a trainer's output (cmd/trainer's format):
    {pass: Digest}."""
    got = {}
    for line in out.splitlines():
        m = PASS_LINE.match(line)
        assert m, f"not a pass line: {line!r}"
        p, records, nbytes, digest = m.groups()
        assert int(p) not in got, f"pass {p} printed twice"
        got[int(p)] = Digest(int(records), int(nbytes), int(digest, 16))
    return got


def test_go_and_python_trainers_digests_of_a_named_index_range_dataset_add_up(master):
    n, per_task, passes = 5000, 100, 2
    _, addr = master("-shuffle-seed", "11")
    with Client(addr, dataset="eval") as c:
        c.declare(records=n, records_per_task=per_task, passes=passes)
    # A few seconds of training each: both trainers get tasks of every pass.
    py = subprocess.Popen([sys.executable, "-m", "trainmaster", "train", "--addr", addr, "--dataset-name", "eval",
                           "--name", "python-trainer", "--record-delay", "0.0002"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "python")})
    try:
        # The Go trainer starts once the Python one has a task (Python
        # starts slower): both train.
        with Client(addr, dataset="eval") as c:
            deadline = time.monotonic() + 30
            while not (st := c.dataset_status()).get("Pending") and not st.get("Done") and py.poll() is None:
                assert time.monotonic() < deadline, "the Python trainer took no task"
                time.sleep(0.01)
        go = subprocess.run([binary("trainer"), "-addr", addr, "-dataset-name", "eval", "-name", "go-trainer",
                             "-record-delay", "200us"], capture_output=True, text=True, timeout=120)
        py_out, py_err = py.communicate(timeout=120)
    finally:
        if py.poll() is None:
            py.kill()
            py.wait()
    assert go.returncode == 0, f"cmd/trainer exited {go.returncode}:\n{go.stderr}"
    assert py.returncode == 0, f"python -m trainmaster train exited {py.returncode}:\n{py_err}"
    go_passes, py_passes = _passes(go.stdout), _passes(py_out)
    assert set(go_passes) == set(py_passes) == set(range(passes)), (
        f"not both trainers in every pass: Go {go_passes}, Python {py_passes}")
    want = Digest()
    for i in range(n):
        want.add(i.to_bytes(8, "little"))
    for p in range(passes):
        total = Digest()
        for got in (go_passes, py_passes):
            total.combine(got.get(p, Digest()))
        assert (total.records, total.bytes, str(total)) == (n, 8 * n, str(want)), (
            f"pass {p}: Go {go_passes.get(p)}, Python {py_passes.get(p)}; want {want}")
    with Client(addr, dataset="eval") as c:
        st = c.dataset_status()
    assert st["AllDone"] and st["Pass"] == passes and st.get("Failed", 0) == 0
