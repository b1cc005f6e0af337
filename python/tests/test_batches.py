"""Client.batches against scripted masters, no binaries: a rank's batches
are its plan's, across task boundaries, pieces and cuts; a task is reported
finished only once the batch holding its last record was trained (the loop
asked for the next, or closed it); a rank handed less than its share ends
short and says so; the group's final errors are raised; and what goes on
the wire, through a fake JSON-RPC master."""

from __future__ import annotations

import json
import logging
import socketserver
import threading
from typing import Any, List, Tuple

import pytest

from trainmaster import AllDone, BadGroup, Client, MasterError, NoTask, PassOver, PassTooSmall, RankDone
from trainmaster import pipeline


def _task(index, start, end, *, share=10, k=3, left, **more):
    """A range task of a rank's share: records start..end-1."""
    t = {"Index": index, "Epoch": 1, "Pass": 0, "Start": start, "End": end, "Rank": 1, "Ranks": 2, "Batch": 4,
         "RankRecords": share, "RankBatches": k, **more}
    if left:
        t["RankLeft"] = left
    return t


class _Scripted(Client):
    """A Client whose master is a script: get_task answers the next entry
    (a task, or an exception to raise), then raises `after`; every ask is
    kept, and so is every finish."""

    def __init__(self, script, after=RankDone("rank done: rank 1 was handed its share"), status=None):
        super().__init__("127.0.0.1:1", progress_interval=0, min_backoff=0.001, max_backoff=0.01)  # never connects
        self.script, self.after, self.status = list(script), after, status or {}
        self.asked: List[Tuple[Any, Any]] = []
        self.finished: List[int] = []

    def dataset_status(self, name=None):
        return self.status

    def get_task(self, one_pass=None, group=None):
        self.asked.append((one_pass, group))
        if not self.script:
            raise self.after
        answer = self.script.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    def task_finished(self, task):
        self.finished.append(task["Index"])
        return 1


@pytest.fixture
def finishes(monkeypatch):
    """Every finish a Batches releases, in order, as it releases it (the
    loop's reporter thread sends them later): (task, batches received by
    the consumer so far)."""
    got = []
    received = [0]
    original = pipeline.Loop.finish

    def finish(self, task):
        got.append((task["Index"], received[0]))
        original(self, task)

    monkeypatch.setattr(pipeline.Loop, "finish", finish)
    return got, received


def test_a_rank_yields_its_plan_across_tasks_pieces_and_cuts(finishes):
    got, received = finishes
    # Share 10, batch 4, K 3: batches 4, 4, 2. A task of 3, a piece of 4
    # (task 5's records 2..5 of 50..59), a task cut at 3 of its 6.
    c = _Scripted([_task(0, 0, 3, left=7), _task(12, 50, 60, left=3, Piece=True, Of=5, From=2, To=6),
                   _task(2, 20, 26, left=0, To=3)])
    b = c.batches(4, group=(1, 2), of_pass=0)
    assert b.plan is None
    batches = []
    for batch in b:
        batches.append(batch)
        received[0] += 1
    assert batches == [[0, 1, 2, 52], [53, 54, 55, 20], [21, 22]]
    assert b.plan == {"pass": 0, "rank": 1, "ranks": 2, "share": 10, "batches": 3, "batch_size": 4,
                      "batch_sizes": [4, 4, 2]}
    # Asked as rank 1 of 2 with batch 4, for pass 0, and not again once
    # a task said the share was out (no RankLeft).
    assert c.asked == [(0, (1, 2, 4))] * 3
    # Each task finished once the batch with its last record was trained:
    # task 0's last record is in batch 0, finished when batch 1 was asked
    # for (1 received); the piece's in batch 1, task 2's in batch 2.
    assert got == [(0, 1), (12, 2), (2, 3)]
    assert c.finished == [0, 12, 2]


def test_a_task_ending_with_its_batch_is_finished_when_the_next_is_asked_for(finishes):
    got, received = finishes
    c = _Scripted([_task(0, 0, 4, share=8, k=2, left=4), _task(1, 4, 8, share=8, k=2, left=0)])
    b = c.batches(4, group=(1, 2), of_pass=0)
    assert next(b) == [0, 1, 2, 3]
    received[0] += 1
    assert got == []  # batch 0 not trained yet: the loop did not ask for more
    assert next(b) == [4, 5, 6, 7]
    received[0] += 1
    assert got == [(0, 1)]
    with pytest.raises(StopIteration):
        next(b)
    assert got == [(0, 1), (1, 2)]


def test_a_loop_left_early_finishes_only_what_it_trained(finishes):
    got, received = finishes
    c = _Scripted([_task(0, 0, 3, left=7), _task(1, 3, 6, left=4), _task(2, 6, 10, left=0)])
    b = c.batches(4, group=(1, 2), of_pass=0)
    for batch in b:
        received[0] += 1
        break  # trained [0, 1, 2, 3]: task 0 whole, task 1 in part
    b.close()
    assert got == [(0, 1)]
    assert c.finished == [0]


def test_a_for_left_early_closes_its_batches(finishes):
    got, received = finishes
    c = _Scripted([_task(0, 0, 3, left=7), _task(1, 3, 6, left=4), _task(2, 6, 10, left=0)])
    for batch in c.batches(4, group=(1, 2), of_pass=0):
        received[0] += 1
        break  # the iterator is dropped here, as a generator's would be: closed
    assert got == [(0, 1)]
    assert not [t for t in threading.enumerate() if t.name == "trainmaster-prefetch"], "the loop's threads run on"


def test_with_hold_only_what_consumed_says_was_trained_is_finished(finishes):
    got, _ = finishes
    c = _Scripted([_task(0, 0, 3, left=7), _task(1, 3, 6, left=4), _task(2, 6, 10, left=0)])
    b = c.batches(4, group=(1, 2), of_pass=0, hold=True)
    assert list(b) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert got == []  # all formed, none trained
    b.consumed(1)
    assert [t for t, _ in got] == [0]
    b.consumed(3)
    assert [t for t, _ in got] == [0, 1, 2]
    b.close()
    assert c.finished == [0, 1, 2]


def test_a_rank_handed_less_than_its_share_ends_short_and_says_so(caplog):
    # Share 10, but the master answers rank done after 7 records (a task
    # failed for good).
    c = _Scripted([_task(0, 0, 3, left=7), _task(1, 3, 7, left=3)])
    with caplog.at_level(logging.ERROR, logger="trainmaster"):
        got = list(c.batches(4, group=(1, 2), of_pass=0))
    assert got == [[0, 1, 2, 3], [4, 5, 6]]
    assert ("rank 1 of 2, pass 0: the master handed 7 records of the rank's share of 10 (2 of its 3 batches formed)"
            in caplog.text)
    assert c.finished == [0, 1]


def test_no_task_is_waited_out_and_the_pass_ends_at_rank_done():
    c = _Scripted([NoTask("no task available: pass 1 has not begun"), NoTask("no task available"),
                   _task(0, 0, 8, share=8, k=2, left=4, Pass=1)], status={"Pass": 1})
    # RankLeft says 4 more are coming, but the master says rank done: it
    # has the last word.
    assert list(c.batches(4, group=(1, 2))) == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert c.asked == [(1, (1, 2, 4))] * 4


@pytest.mark.parametrize("error", [BadGroup("bad group: rank 1 asks as a group of 2 ranks, batch 4; pass 0 is "
                                            "trained by a group of 3 ranks, batch 4"),
                                   PassTooSmall("pass too small for the group: 2 records in the pass, 3 ranks")])
def test_the_groups_final_errors_are_raised(error):
    c = _Scripted([error])
    with pytest.raises(type(error), match=str(error)):
        list(c.batches(4, group=(1, 2), of_pass=0))
    assert len(c.asked) == 1  # not asked again


def test_a_group_out_of_bounds_is_refused_before_asking():
    c = _Scripted([])
    for group, batch in (((2, 2), 4), ((0, 0), 4), ((0, 2), 0)):
        with pytest.raises((BadGroup, ValueError)):
            c.batches(batch, group=group, of_pass=0)
    assert c.asked == []


def test_a_master_without_groups_is_a_clear_error():
    c = _Scripted([{"Index": 0, "Epoch": 1, "Pass": 0, "Start": 0, "End": 8}])
    with pytest.raises(MasterError, match="without a plan .* does not serve groups of ranks"):
        list(c.batches(4, group=(1, 2), of_pass=0))


def test_the_next_batches_of_a_rank_ask_for_the_next_pass():
    """A rank done with its share asks for the next pass while the master
    is still in this one (the other ranks train theirs)."""
    c = _Scripted([_task(0, 0, 8, share=8, k=2, left=0)], status={"Pass": 0})
    assert len(list(c.batches(4, group=(1, 2)))) == 2
    c.script = [NoTask("no task available: pass 1 has not begun"), _task(0, 0, 8, share=8, k=2, left=0, Pass=1)]
    assert len(list(c.batches(4, group=(1, 2)))) == 2
    assert [one_pass for one_pass, _ in c.asked] == [0, 1, 1]


def test_without_a_group_batches_are_full_but_the_last(finishes):
    got, received = finishes
    tasks = [{"Index": i, "Epoch": 1, "Pass": 2, "Start": 10 * i, "End": 10 * i + 5} for i in range(3)]
    c = _Scripted(tasks, after=PassOver("pass over"))
    b = c.batches(4, of_pass=2)
    out = []
    for batch in b:
        out.append(batch)
        received[0] += 1
    assert out == [[0, 1, 2, 3], [4, 10, 11, 12], [13, 14, 20, 21], [22, 23, 24]]
    assert [t for t, _ in got] == [0, 1, 2] and b.plan is None and b.pass_ == 2
    assert c.asked[0] == (2, None)


def test_without_a_group_the_last_tasks_are_finished_when_the_master_waits_for_them():
    """Outside a group the pass ends only when the master says so, and it
    says so only once the trainer's last task is finished: a batch formed
    of that task's last records and not yet delivered must not hold it."""

    class WaitsForTheFinish(_Scripted):
        def get_task(self, one_pass=None, group=None):
            if self.script:
                return super().get_task(one_pass, group)
            self.asked.append((one_pass, group))
            if self.finished == [0]:
                raise PassOver("pass over")
            if len(self.asked) > 500:
                raise AssertionError("the master waited for the finish of task 0, which never came")
            raise NoTask("no task available")

    c = WaitsForTheFinish([{"Index": 0, "Epoch": 1, "Pass": 0, "Start": 0, "End": 5}])
    assert list(c.batches(4, of_pass=0)) == [[0, 1, 2, 3], [4]]


def test_all_passes_done_yields_nothing():
    c = _Scripted([], after=AllDone("all passes done"), status={"Pass": 2, "AllDone": True})
    b = c.batches(4, group=(0, 2))
    assert list(b) == [] and b.plan is None


# What travels: a fake JSON-RPC master on loopback.

class _FakeMaster(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, answers) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.answers, self.calls, self.mu = list(answers), [], threading.Lock()

    def answer(self, method, arg):
        with self.mu:
            self.calls.append((method, arg))
            if method != "GetTask":
                return 1, None
            if not self.answers:
                return None, "rank done: rank 0 was handed its 6 records of pass 0"
            return self.answers.pop(0)


class _Handler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        for line in self.rfile:
            req = json.loads(line)
            result, error = self.server.answer(req["method"].partition(".")[2], req["params"][0])
            self.wfile.write(json.dumps({"id": req["id"], "result": result, "error": error}).encode() + b"\n")


def test_what_a_rank_sends_and_what_it_makes_of_the_answers():
    plan = {"Ranks": 2, "Batch": 4, "RankRecords": 6, "RankBatches": 2}
    m = _FakeMaster([(None, "no task available: pass 0 has not begun: the master is in pass 3"),
                     ({"Index": 4, "Epoch": 1, "Pass": 0, "Start": 40, "End": 50, "To": 6, **plan}, None)])
    threading.Thread(target=m.serve_forever, daemon=True).start()
    try:
        with Client("%s:%d" % m.server_address, name="gpu-rank0", min_backoff=0.001) as c:
            assert list(c.batches(4, group=(0, 2), of_pass=0)) == [[40, 41, 42, 43], [44, 45]]
    finally:
        m.shutdown()
        m.server_close()
    asks = [arg for method, arg in m.calls if method == "GetTask"]
    numbers = [arg.pop("Ask") for arg in asks]  # each GetTask its own number (wire.Task.Ask)
    assert numbers[1] == numbers[0] + 1, numbers
    # Rank 0 travels as nothing, as the master and go/client leave zeros out.
    assert asks == [{"Trainer": "gpu-rank0", "OnePass": True, "Pass": 0, "Ranks": 2, "Batch": 4}] * 2
    assert [arg for method, arg in m.calls if method == "TaskFinished"] == [
        {"Index": 4, "Epoch": 1, "Pass": 0, "Trainer": "gpu-rank0"}]
