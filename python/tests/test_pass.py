"""records(per_pass=True) against a real master: each loop is one pass,
with two trainers sharing it; a loop begun once every pass is done yields
nothing."""

from __future__ import annotations

import threading
from collections import Counter

import trainmaster
from trainmaster import Client, PassOver


def _loops(addr, trainers, meet):
    """Runs a per-pass records() loop in each of trainers threads at once;
    returns the indexes yielded and the passes of their records. With meet,
    each loop waits at its first record until every loop has one."""
    first = threading.Barrier(trainers)
    seen, passes, errors = Counter(), set(), []
    lock = threading.Lock()

    def run():
        try:
            for k, rec in enumerate(trainmaster.records(addr=addr, dataset_name="eval", per_pass=True)):
                if meet and k == 0:
                    first.wait(30)
                with lock:
                    seen[rec.index] += 1
                    passes.add(rec.pass_)
        except BaseException as e:  # noqa: BLE001 (reported by the test)
            errors.append(e)

    threads = [threading.Thread(target=run) for _ in range(trainers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    return seen, passes


def test_per_pass_loops_yield_one_pass_each(master):
    n, per_task, passes = 1000, 25, 2
    proc, addr = master()
    with Client(addr, dataset="eval") as c:
        c.declare(records=n, records_per_task=per_task, passes=passes)
    for p in range(passes):
        seen, got = _loops(addr, 2, meet=True)
        assert got == {p} and set(seen) == set(range(n)) and set(seen.values()) == {1}, f"loop {p}"
    seen, got = _loops(addr, 2, meet=False)
    assert not seen


def test_get_task_of_one_pass_is_answered_pass_over_once_it_ended(master):
    proc, addr = master()
    with Client(addr, dataset="eval") as c:
        c.declare(records=10, records_per_task=10, passes=2)
        task = c.get_task(one_pass=0)
        assert task["Pass"] == 0
        c.task_finished(task)
        try:
            c.get_task(one_pass=0)
        except PassOver as e:
            assert "pass over" in str(e)
        else:
            raise AssertionError("a task of pass 1 was handed to a caller of pass 0")
        assert c.get_task(one_pass=1)["Pass"] == 1
