"""Progress inside a task (wire.Progress), Python client against the real master."""

from __future__ import annotations

import logging
import threading
import time

import pytest

from conftest import write_dataset
from trainmaster import AllDone, Client, MasterError, Record, recordio
from trainmaster import pipeline
from trainmaster import tasks as tasks_module
from trainmaster.position import Position
from trainmaster.tasks import read_task
from trainmaster.wire import progress_every


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
    # Recorded; "To" is 0 (the master omits it): the task's end, unchanged.
    assert c.task_progress(task, 10) == {"Report": 1, "To": 0}
    assert c.task_progress(task, 20) == {"Report": 1, "To": 0}  # a second one close to it is too
    assert c.task_progress(task, 30) == {"Report": 5, "To": 0}  # a third is too soon
    c.close()


def _task_over_chunks(tmp_path, read, **fields):
    """A task over the chunks of a file of 100 records written by
    cmd/recordio, whose blocks but those in read name a file that does not
    exist; the file's records, and where each chunk starts."""
    path = write_dataset(tmp_path / "data", 1, 100).replace("*", "00")
    headers = recordio.index(path)
    assert len(headers) >= 5, headers
    starts = [sum(h.records for h in headers[:i]) for i in range(len(headers))]
    blocks = [{"Path": path if i in read else path + ".gone", "Idx": h.index, "Offset": h.offset,
               "NumRecords": h.records} for i, h in enumerate(headers)]
    task = {"Index": 3, "Epoch": 1, "Pass": 0, "Blocks": blocks, **fields}
    return task, list(recordio.scan(path)), starts


@pytest.mark.parametrize("inside", [True, False], ids=["from-to-inside-chunks", "from-to-on-chunk-bounds"])
def test_a_task_in_file_order_reads_only_the_blocks_its_range_reaches(tmp_path, inside):
    # As go/client TestReadSkipsBlocksOutsideTheRange: chunks 2 and 3 hold
    # the task's range; the others are never opened.
    task, want, starts = _task_over_chunks(tmp_path, {2, 3})
    task["From"], task["To"] = (starts[2] + 2, starts[3] + 1) if inside else (starts[2], starts[4])
    records = read_task(task)
    assert len(records) == len(want)  # every position of the task, placeholders outside the range
    assert records[starts[2]:starts[4]] == want[starts[2]:starts[4]]
    position = Position(_Answers({"Report": 1, "To": 0}))
    got = list(position.begin(task, records))
    assert [(r.data, r.position) for r in got] == [(want[i], i) for i in range(task["From"], task["To"])]
    assert got[-1].last and not any(r.last for r in got[:-1])
    position.end()
    # A shuffled task reads every block (its positions are not the file's),
    # and so does one without a range.
    with pytest.raises(OSError):
        read_task({**task, "Seed": 7})
    with pytest.raises(OSError):
        read_task({**task, "From": 0, "To": 0})


def test_a_task_in_file_order_without_a_range_is_read_whole(tmp_path):
    task, want, starts = _task_over_chunks(tmp_path, set(range(100)))
    assert read_task(task) == want
    assert read_task({**task, "From": starts[1], "To": starts[2]})[starts[1]:starts[2]] == want[starts[1]:starts[2]]


class _Answers:
    """Stands for a Client in Position: answers every progress report with
    reply, and keeps the positions reported."""

    progress_interval = 1.0
    follows_master = False

    def __init__(self, reply):
        self.reply, self.sent = reply, []

    def task_progress(self, task, done, within=None):
        self.sent.append(done)
        return self.reply


def _records(n):
    return [b"r%d" % i for i in range(n)]


def test_task_is_yielded_from_its_from_to_its_to():
    position = Position(_Answers({"Report": 1, "To": 0}))
    got = list(position.begin({"Index": 7, "Pass": 2, "From": 2, "To": 6}, _records(10)))
    assert got == [Record(b"r%d" % i, 7, 2, i == 5, i) for i in range(2, 6)]
    assert not position.end()


def test_piece_records_carry_the_task_they_were_cut_from():
    position = Position(_Answers({"Report": 1, "To": 0}))
    got = list(position.begin({"Index": 9, "Pass": 0, "Piece": True, "Of": 3, "From": 4, "To": 8}, _records(10)))
    assert [(r.data, r.task, r.position, r.last) for r in got] == [(b"r%d" % i, 3, i, i == 7) for i in range(4, 8)]
    # A piece of task 0: Of is omitted on the wire.
    got = list(position.begin({"Index": 9, "Pass": 0, "Piece": True, "From": 8}, _records(10)))
    assert [(r.task, r.position, r.last) for r in got] == [(0, 8, False), (0, 9, True)]


def test_master_cuts_the_task_being_yielded():
    answers = _Answers({"Report": 1, "To": 6})
    position = Position(answers)
    task = {"Index": 1, "Pass": 0}
    it = position.begin(task, _records(10))
    got = [next(it) for _ in range(3)]
    position.report()  # learns the task ends at 6
    got.extend(it)
    assert [r.position for r in got] == list(range(6))
    # Cut short, and the cut learned in time: the record at the cut is its
    # task's last.
    assert [r.last for r in got] == [False] * 5 + [True]
    position.report()  # the position follows the shorter list
    assert answers.sent == [3, 6]
    assert not position.end()  # not dropped: it is reported finished


def test_a_cut_learned_in_time_from_a_resumed_start_marks_its_record_last():
    # From 2, cut at 7 after one record: the flag of position 6 is set; a
    # second, shorter cut learned one record later moves the end to 4.
    answers = _Answers({"Report": 1, "To": 7})
    position = Position(answers)
    it = position.begin({"Index": 1, "Pass": 0, "From": 2}, _records(10))
    got = [next(it)]
    position.report()
    got.append(next(it))
    answers.reply = {"Report": 5, "To": 5}
    position.report()
    got.extend(it)
    assert [(r.position, r.last) for r in got] == [(2, False), (3, False), (4, True)]
    assert answers.sent == [3, 4]
    assert not position.end()


def test_a_cut_learned_just_after_its_record_marks_none_last():
    # The loop yielded the record at the cut before it learned the cut: it
    # went out unmarked, and the loop stops there.
    answers = _Answers({"Report": 1, "To": 6})
    position = Position(answers)
    it = position.begin({"Index": 1, "Pass": 0}, _records(10))
    got = [next(it) for _ in range(6)]
    position.report()
    got.extend(it)
    assert [r.position for r in got] == list(range(6))
    assert not any(r.last for r in got)
    assert not position.end()


def test_a_loop_past_the_cut_stops_at_once():
    answers = _Answers({"Report": 5, "To": 4})  # too soon, still with the task's end
    position = Position(answers)
    it = position.begin({"Index": 1, "Pass": 0}, _records(10))
    got = [next(it) for _ in range(7)]
    position.report()
    assert list(it) == []
    assert [r.position for r in got] == list(range(7))
    assert not any(r.last for r in got)  # past the cut when it learned it: none is its task's last
    position.report()  # at the cut, which it reported past: nothing more to say
    assert answers.sent == [7]
    assert not position.end()


def test_no_cut_without_a_shorter_to_or_after_the_task():
    for reply in ({"Report": 1, "To": 0}, {"Report": 1, "To": 10}, {"Report": 1, "To": 12}):
        position = Position(_Answers(reply))
        it = position.begin({"Index": 1, "Pass": 0}, _records(10))
        next(it)
        position.report()
        assert [r.position for r in it] == list(range(1, 10)), reply
    # A cut answered once the loop moved on to the next task changes nothing
    # in that one.
    answers = _Answers({"Report": 1, "To": 2})
    position = Position(answers)
    first = position.begin({"Index": 1, "Pass": 0}, _records(10))
    next(first)
    nxt = []

    def moved_on(task, done):  # the loop ends the task and begins the next while the report is on its way
        list(first)
        position.end()
        nxt.append(position.begin({"Index": 2, "Pass": 0}, _records(10)))
        return _Answers.task_progress(answers, task, done)

    answers.task_progress = moved_on
    position.report()
    assert answers.sent == [1]
    assert [r.position for r in nxt[0]] == list(range(10))


class _StandIn(Client):
    """A Client whose master is scripted: get_task hands out tasks in turn,
    then AllDone; task_progress answers each task's check with answers[Index]
    (an exception is raised); finishes are kept. Every task holds 5 records."""

    def __init__(self, tasks, answers):
        super().__init__("127.0.0.1:1", progress_interval=3600)  # never connects
        self.tasks, self.answers = list(tasks), answers
        self.checked, self.finished = [], []

    def get_task(self):
        if not self.tasks:
            raise AllDone("all passes done")
        return self.tasks.pop(0)

    def task_progress(self, task, done, within=None):
        self.checked.append((task["Index"], done))
        answer = self.answers.get(task["Index"], {"Report": 1, "To": 0})
        if isinstance(answer, BaseException):
            raise answer
        return answer

    def task_finished(self, task):
        self.finished.append(task["Index"])
        return 1


@pytest.fixture
def five_records(monkeypatch):
    monkeypatch.setattr(tasks_module, "read_task", lambda task: _records(5))


def _train(c):
    got = [(r.task, r.position, r.last) for r in c.records()]
    c.close()
    return got


def test_a_waited_task_is_checked_skipped_when_another_trainers_and_cut_when_cut(monkeypatch, five_records, caplog):
    monkeypatch.setattr(pipeline, "CHECK_AFTER", 0.0)  # every task waited long enough
    c = _StandIn([{"Index": 1, "Epoch": 1, "Pass": 0}, {"Index": 2, "Epoch": 1, "Pass": 0},
                  {"Index": 3, "Epoch": 1, "Pass": 0, "From": 1}, {"Index": 4, "Epoch": 1, "Pass": 0}],
                 {2: {"Report": 4, "To": 0},  # superseded: another trainer has it
                  3: {"Report": 1, "To": 3},  # cut short while it waited
                  4: MasterError("the master refused")})  # no answer: trained
    with caplog.at_level(logging.INFO, logger="trainmaster"):
        got = _train(c)
    assert got == ([(1, p, p == 4) for p in range(5)] + [(3, p, p == 2) for p in range(1, 3)] +
                   [(4, p, p == 4) for p in range(5)])
    # Each checked with a report that moves nothing: at its From.
    assert c.checked == [(1, 0), (2, 0), (3, 1), (4, 0)]
    assert c.finished == [1, 3, 4]  # the skipped task is not reported finished
    assert "task 2 waited and went to another trainer; dropping it" in caplog.text


def test_done_and_stale_tasks_are_skipped_too(monkeypatch, five_records):
    monkeypatch.setattr(pipeline, "CHECK_AFTER", 0.0)
    c = _StandIn([{"Index": i, "Epoch": 1, "Pass": 0} for i in (1, 2, 3)],
                 {1: {"Report": 2, "To": 0}, 2: {"Report": 3, "To": 0}, 3: {"Report": 5, "To": 2}})
    assert _train(c) == [(3, 0, False), (3, 1, True)]
    assert c.finished == [3]


def test_no_check_for_a_task_that_did_not_wait_or_without_progress(monkeypatch, five_records):
    tasks = [{"Index": 1, "Epoch": 1, "Pass": 0}, {"Index": 2, "Epoch": 1, "Pass": 0}]
    superseded = {1: {"Report": 4, "To": 0}, 2: {"Report": 4, "To": 0}}
    c = _StandIn(tasks, superseded)  # CHECK_AFTER is 1 s: the tasks are yielded at once
    assert [t for t, _, last in _train(c) if last] == [1, 2]
    assert c.checked == [] and c.finished == [1, 2]
    monkeypatch.setattr(pipeline, "CHECK_AFTER", 0.0)
    c = _StandIn(tasks, superseded)
    c.progress_interval = 0  # no progress reporting: no check either
    assert len(_train(c)) == 10 and c.checked == []
    c = _StandIn(tasks, superseded)
    got = [(r.task, r.last) for r in c.records(finish_when_read=True)]
    c.close()
    assert len(got) == 10 and c.checked == [] and c.finished == [1, 2]


@pytest.mark.parametrize("millis, every", [(0, 10.0), (None, 10.0), (-5, 10.0), (200, 1.0), (1000, 1.0), (2500, 2.5),
                                           (10000, 10.0)])
def test_progress_every_is_what_the_task_asks(millis, every):
    task = {"Index": 0, "Epoch": 1, "Pass": 0}
    if millis is not None:
        task["ProgressMillis"] = millis
    assert progress_every(task) == every


@pytest.mark.parametrize("follows, interval, millis, reports", [
    (True, 10.0, 1000, 2),  # as the task asks, from its start
    (True, 10.0, 400, 2),  # never more often than MIN_PROGRESS_INTERVAL
    (False, 3600, 1000, 0),  # an interval configured is kept
    (True, 10.0, 0, 1),  # a task that asks nothing: after 1 s, 2 s more, ... up to 10 s
])
def test_progress_is_reported_as_often_as_the_task_asks(follows, interval, millis, reports):
    answers = _Answers({"Report": 1, "To": 0})
    answers.follows_master, answers.progress_interval = follows, interval
    position = Position(answers)
    stop = threading.Event()
    reporter = threading.Thread(target=position.run, args=(stop,))
    reporter.start()
    try:
        for _ in position.begin({"Index": 0, "Epoch": 1, "Pass": 0, "ProgressMillis": millis}, _records(20)):
            time.sleep(0.12)  # training: 2.4 s for the task
    finally:
        stop.set()
        position.wake()
        reporter.join(5)
    assert not reporter.is_alive(), "run did not stop once woken"
    assert len(answers.sent) == reports, answers.sent
