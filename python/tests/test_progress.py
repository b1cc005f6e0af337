"""Progress inside a task (wire.Progress), Python client against the real master."""

from __future__ import annotations

import time

from conftest import write_dataset
from trainmaster import Client


def test_stopped_loop_reports_progress_and_next_dispatch_resumes(tmp_path, master):
    # One file of 300 records in chunks of about 10, all in one task.
    pattern = write_dataset(tmp_path / "data", 1, 300)
    _, addr = master("-chunks-per-task", "1000", "-trainer-grace", "200ms", "-task-timeout-min", "5m")
    first = Client(addr, name="first", min_backoff=0.01, max_backoff=0.05, progress_interval=3600)
    first.report_dataset([pattern])
    seen = []
    for record in first.records():
        seen.append(record.data)
        if len(seen) == 123:
            break  # stops cleanly: the loop reports 123 records trained
    first.close()  # and goes away: its task comes back after the grace

    second = Client(addr, name="second", min_backoff=0.01, max_backoff=0.05)
    started = time.monotonic()
    seen.extend(r.data for r in second.records())
    second.close()
    assert time.monotonic() - started < 60, "the task waited for its timeout, not the lost trainer's grace"
    assert seen == [f"part 00 record {i:05d}".encode() for i in range(300)]


def test_progress_reports_are_recorded_and_throttled(tmp_path, master):
    pattern = write_dataset(tmp_path / "data", 1, 50)
    _, addr = master("-chunks-per-task", "1000")
    c = Client(addr, name="t")
    c.report_dataset([pattern])
    task = c.get_task()
    assert task.get("From", 0) == 0
    assert c.task_progress(task, 10) == 1  # recorded
    assert c.task_progress(task, 20) == 1  # a second one close to it is too
    assert c.task_progress(task, 30) == 5  # a third is too soon
    c.close()
