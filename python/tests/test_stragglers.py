"""The master's -stragglers split, Python clients against the real master: a
slow trainer's task is cut short, and its rest trained by an idle one."""

from __future__ import annotations

import logging
import threading
import time

from conftest import write_dataset
from trainmaster import Client

TASKS, RECORDS = 4, 200  # per task: 20 chunks of 10 records


def wait_until(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def test_straggler_is_split_and_its_rest_trained_by_an_idle_trainer(tmp_path, master, caplog):
    pattern = write_dataset(tmp_path / "data", 1, TASKS * RECORDS)
    proc, addr = master("-chunks-per-task", "20", "-passes", "1", "-stragglers", "split",
                        "-task-timeout-min", "5m")
    fast = Client(addr, name="fast", min_backoff=0.01, max_backoff=0.1, progress_interval=1)
    slow = Client(addr, name="slow", min_backoff=0.01, max_backoff=0.1, progress_interval=1)
    fast.report_dataset([pattern])
    seen = {"fast": [], "slow": []}
    errors = []
    slow_started = threading.Event()

    def fast_body(rec) -> None:
        if len(seen["fast"]) == 1:  # holds its three tasks until the slow one trains the last
            assert slow_started.wait(20), "the slow trainer did not start"

    def slow_body(rec) -> None:
        slow_started.set()
        time.sleep(0.03)  # about 33 records a second: a 200-record task takes 6 s

    def train(name, client, body) -> None:
        try:
            for rec in client.records():
                seen[name].append(rec)
                body(rec)
        except BaseException as e:  # noqa: BLE001 - reported by the test
            errors.append((name, e))
            slow_started.set()

    threads = [threading.Thread(target=train, args=("fast", fast, fast_body), daemon=True),
               threading.Thread(target=train, args=("slow", slow, slow_body), daemon=True)]
    started = time.monotonic()
    with caplog.at_level(logging.INFO, logger="trainmaster"):
        try:
            threads[0].start()
            # The fast trainer yields its first task, has its second queued
            # and its fetcher holds a third: one task is left for the slow one.
            wait_until(lambda: fast.status()["Todo"] == 1, 10, "the fast trainer to take three tasks")
            threads[1].start()
            for t in threads:
                t.join(20)
            assert not any(t.is_alive() for t in threads), "the trainers did not finish the pass"
        finally:
            fast.close()
            slow.close()
    elapsed = time.monotonic() - started
    assert not errors, errors

    # The master split the slow trainer's task, and the slow trainer stopped
    # where it was cut: every record of the pass was trained exactly once.
    split = proc.wait_for(r"straggler split: task (\d+) keeps its records up to (\d+), piece (\d+)", timeout=1)
    task, cut = int(split.group(1)), int(split.group(2))
    assert [r.task for r in seen["slow"]] == [task] * len(seen["slow"])
    assert [r.position for r in seen["slow"]] == list(range(cut)), "the slow trainer did not stop at the cut"
    # Cut short while it was yielded, the cut learned before the loop got
    # there (it stopped at the cut): the record at the cut is its last.
    assert [r.last for r in seen["slow"]] == [False] * (cut - 1) + [True]
    piece = [r for r in seen["fast"] if r.task == task]
    assert [r.position for r in piece] == list(range(cut, RECORDS)), "the piece is not the rest of the task"
    assert piece[-1].last
    trained = sorted((r.task, r.position, r.data) for r in seen["fast"] + seen["slow"])
    assert trained == [(t, p, f"part 00 record {t * RECORDS + p:05d}".encode())
                       for t in range(TASKS) for p in range(RECORDS)]
    assert {r.pass_ for r in seen["fast"] + seen["slow"]} == {0}
    assert f"the master cut task {task} short at {cut} for an idle trainer" in caplog.text
    assert elapsed < 15, f"the split took {elapsed:.1f} s"
