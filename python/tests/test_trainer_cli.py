"""python -m trainmaster train's accounting, against a scripted stand-in
for Client: a task counts once its last record is consumed, a dropped one
does not, and each task's line says where it started."""

from __future__ import annotations

import json

from trainmaster import Digest, Record
from trainmaster import __main__ as cli


def _data(task, position):
    return b"t%d r%d" % (task, position)


def _run(monkeypatch, capsys, script):
    """Runs train --json with records() yielding script: (pass, task,
    positions, last) runs, last marking the run's final record."""

    class StandIn:
        def __init__(self, *args, **kwargs):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            pass

        def records(self):
            for pass_, task, positions, last in script:
                for p in positions:
                    yield Record(_data(task, p), task, pass_, last and p == positions[-1], p)

    monkeypatch.setattr(cli, "Client", StandIn)
    assert cli.main(["train", "--addr", "127.0.0.1:1", "--json"]) == 0
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
