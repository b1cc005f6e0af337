"""What a checkpoint report holds (Held), against scripted masters, no
binaries: a records() loop holds the tasks it consumed whose finish the
master has not answered, and the task it yields through the record its
consumer has; batches hold what the consumer trained (with hold, what
consumed(n) says), never what was formed ahead, and their progress reports
say no more; a trainer outside a group ends a pass whose rest is its own
without reporting finished what it has not trained. And what goes on the
wire, through a fake JSON-RPC master: every report of a task carries its
Gen, every GetTask an Ask of its own, the same when the call is retried."""

from __future__ import annotations

import json
import socketserver
import threading
from typing import Any, List

import pytest

from trainmaster import Client, NoTask, PassOver
from trainmaster.held import Trained


def _range(index, start, end, **more):
    return {"Index": index, "Epoch": 1, "Pass": 0, "Start": start, "End": end, **more}


class _Local(Client):
    """A Client whose master is a script: get_task answers its tasks in
    turn, then "no task available" until every task handed was reported
    finished, then "pass over". Finishes, progress reports and checkpoint
    reports are kept; a finish is answered once gate is set."""

    def __init__(self, script, status=None):
        super().__init__("127.0.0.1:1", progress_interval=0, min_backoff=0.001, max_backoff=0.01)  # never connects
        self.script, self.status = list(script), status or {}
        self.handed: List[int] = []
        self.finished: List[int] = []
        self.progress: List[Any] = []
        self.checkpoints: List[dict] = []
        self.gate = threading.Event()
        self.gate.set()
        self.acked = threading.Event()

    def dataset_status(self, name=None):
        return dict(self.status)

    def get_task(self, one_pass=None, group=None):
        if self.script:
            task = self.script.pop(0)
            self.handed.append(task["Index"])
            return task
        if set(self.handed) <= set(self.finished):
            raise PassOver("pass over")
        raise NoTask("no task available")

    def task_finished(self, task):
        assert self.gate.wait(10)
        self.finished.append(task["Index"])
        self.trained.acked(task)
        self.acked.set()
        return 1

    def task_progress(self, task, done, *, within=None):
        self.progress.append((task["Index"], done))
        return {"Report": 1, "To": 0}

    def _call(self, method, arg, *, within=None):
        assert method == "Checkpoint", method
        self.checkpoints.append(arg)
        return {"ID": len(self.checkpoints), "Kept": [len(self.checkpoints)]}

    def held(self):
        """The Held of a checkpoint taken now, by task."""
        self.checkpoint(f"c{len(self.checkpoints)}")
        return sorted(self.checkpoints[-1].get("Held", []), key=lambda h: h["Index"])


def test_a_records_loop_holds_its_unanswered_finishes_and_the_record_it_has():
    c = _Local([_range(0, 0, 5, Gen=7), _range(1, 5, 10, Epoch=2, Gen=7)])
    c.gate.clear()  # the master does not answer finishes yet
    it = c.records()
    for rec in it:
        if rec.index == 7:  # position 2 of task 1: the loop has it
            break_at = rec
            break
    assert break_at.position == 2
    # Task 0 consumed, its finish not answered; task 1 through the record held.
    assert c.held() == [{"Index": 0, "Epoch": 1, "Pass": 0, "Gen": 7, "Done": 5},
                        {"Index": 1, "Epoch": 2, "Pass": 0, "Gen": 7, "Done": 3}]
    c.gate.set()
    assert c.acked.wait(10)
    assert c.held() == [{"Index": 1, "Epoch": 2, "Pass": 0, "Gen": 7, "Done": 3}]
    assert [rec.index for rec in it] == [8, 9]
    it.close()
    assert c.finished == [0, 1] and c.held() == []


def test_batches_held_for_their_consumer_hold_what_it_trained_and_report_no_more():
    c = _Local([_range(0, 0, 10, Gen=3)], status={"Pass": 0, "Todo": 0, "Pending": 1})
    b = c.batches(4, of_pass=0, hold=True)
    assert next(b) == [0, 1, 2, 3] and next(b) == [4, 5, 6, 7]
    position = b._loop._position
    position.report()
    assert c.held() == [] and c.progress == []  # formed, not trained
    b.consumed(1)
    position.report()
    assert c.progress == [(0, 4)]
    assert c.held() == [{"Index": 0, "Epoch": 1, "Pass": 0, "Gen": 3, "Done": 4}]
    b.consumed(2)
    position.report()
    assert c.progress == [(0, 4), (0, 8)]
    assert c.held() == [{"Index": 0, "Epoch": 1, "Pass": 0, "Gen": 3, "Done": 8}]
    # Every task of the pass left at the master is this trainer's: the
    # pass ends here, and its last task is not reported finished before its
    # last batch is trained.
    assert next(b) == [8, 9]
    with pytest.raises(StopIteration):
        next(b)
    assert c.finished == []
    b.consumed(3)
    b.close()
    assert c.finished == [0] and c.held() == []


def test_outside_a_group_with_others_pending_the_last_tasks_are_finished_early_and_not_held():
    """The old way, kept when the master's pending tasks are not all this
    trainer's: its last tasks are reported finished once all their records
    went into batches (the pass may wait for them); they are not held."""
    c = _Local([_range(0, 0, 6)], status={"Pass": 0, "Todo": 0, "Pending": 2})
    b = c.batches(4, of_pass=0, hold=True)
    assert list(b) == [[0, 1, 2, 3], [4, 5]]
    assert c.finished == [0]  # not trained yet
    b.consumed(2)
    assert c.held() == []
    b.close()


def test_batches_without_hold_hold_the_batch_the_consumer_has():
    c = _Local([_range(0, 0, 6), _range(1, 6, 12)], status={"Pass": 0, "Todo": 0, "Pending": 2})
    c.gate.clear()
    b = c.batches(4, of_pass=0)
    assert next(b) == [0, 1, 2, 3]
    assert c.held() == [{"Index": 0, "Epoch": 1, "Pass": 0, "Done": 4}]
    assert next(b) == [4, 5, 6, 7]
    assert c.held() == [{"Index": 0, "Epoch": 1, "Pass": 0, "Done": 6}, {"Index": 1, "Epoch": 1, "Pass": 0, "Done": 2}]
    c.gate.set()
    b.close()


def test_trained_keeps_a_position_until_the_master_knows_it():
    t = Trained("eval")
    a, b = _range(0, 0, 10, Gen=2), _range(1, 10, 20, Dataset="other")
    t.trained(a, 4)
    t.trained(a, 3)  # a position never goes back
    t.trained(b, 5)
    assert t.through(a) == 4
    assert t.held() == [{"Index": 0, "Epoch": 1, "Pass": 0, "Gen": 2, "Done": 4, "Dataset": "eval"},
                        {"Index": 1, "Epoch": 1, "Pass": 0, "Done": 5, "Dataset": "other"}]
    t.reported(a, 3)  # a progress recorded short of it: still held
    assert t.through(a) == 4
    t.reported(a, 4)
    assert t.through(a) is None
    t.acked(b)
    t.trained(b, 10)  # answered: not held again
    assert t.held() == []
    t.trained(a, 6)
    t.forget(a)
    assert t.held() == []


# What travels: a fake JSON-RPC master on loopback.

class _Master(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, tasks, *, drop_first_get=False) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.tasks, self.calls, self.mu = list(tasks), [], threading.Lock()
        self.drop_first_get = drop_first_get

    def answer(self, method, arg):
        """(result, error), or None to close the connection unanswered."""
        with self.mu:
            self.calls.append((method, arg))
            if method == "GetTask":
                if self.drop_first_get:
                    self.drop_first_get = False
                    return None
                if not self.tasks:
                    return None, "all passes done"
                return self.tasks.pop(0), None
            if method == "TaskProgress":
                return {"Report": 1}, None
            if method == "Checkpoint":
                return {"ID": 3, "Kept": [2, 3]}, None
            if method == "Rewind":
                return {"Rewound": True, "Datasets": ["train"]}, None
            return 1, None


class _Handler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        for line in self.rfile:
            req = json.loads(line)
            answer = self.server.answer(req["method"].partition(".")[2], req["params"][0])
            if answer is None:
                return  # the connection closes: the client retries the call elsewhere
            result, error = answer
            self.wfile.write(json.dumps({"id": req["id"], "result": result, "error": error}).encode() + b"\n")


@pytest.fixture
def fake():
    servers = []

    def start(tasks, **kw):
        m = _Master(tasks, **kw)
        threading.Thread(target=m.serve_forever, daemon=True).start()
        servers.append(m)
        return m, "%s:%d" % m.server_address

    yield start
    for m in servers:
        m.shutdown()
        m.server_close()


def test_every_report_of_a_task_carries_its_gen(fake):
    m, addr = fake([_range(0, 0, 3, Gen=1764000000123), _range(1, 3, 6, Epoch=2, Gen=1764000000123)])
    with Client(addr, name="t", progress_interval=0, min_backoff=0.001) as c:
        got = []
        for rec in c.records():
            got.append(rec.index)
            if rec.index == 4:
                assert c.checkpoint("step-5", pin=True) == {"ID": 3, "Kept": [2, 3]}
                t = {"Index": 1, "Epoch": 2, "Pass": 0, "Gen": 1764000000123}
                c.task_progress(t, 2)
                c.task_failed(t, "cannot read")
        assert c.rewind(3, "restart-1") == {"Rewound": True, "Datasets": ["train"]}
    assert got == list(range(6))
    sent = {method: [arg for mm, arg in m.calls if mm == method] for method, _ in m.calls}
    ident = {"Trainer": "t", "Pass": 0, "Gen": 1764000000123}
    assert sent["TaskFinished"] == [{"Index": 0, "Epoch": 1, **ident}, {"Index": 1, "Epoch": 2, **ident}]
    assert sent["TaskProgress"] == [{"Index": 1, "Epoch": 2, "Done": 2, **ident}]
    assert sent["TaskFailed"] == [{"Index": 1, "Epoch": 2, "Error": "cannot read", **ident}]
    (cp,) = sent["Checkpoint"]
    held = sorted(cp.pop("Held"), key=lambda h: h["Index"])
    assert cp == {"Name": "step-5", "Trainer": "t", "Trainers": 1, "Pin": True}
    # Task 0's finish may or may not be answered by then; task 1 is held
    # through the record the loop has (position 1).
    assert held[-1] == {"Index": 1, "Epoch": 2, "Pass": 0, "Gen": 1764000000123, "Done": 2}
    assert held[:-1] in ([], [{"Index": 0, "Epoch": 1, "Pass": 0, "Gen": 1764000000123, "Done": 3}])
    assert sent["Rewind"] == [{"ID": 3, "Restart": "restart-1", "Trainer": "t"}]


def test_a_get_task_retried_sends_the_same_ask(fake):
    """The master closes the connection on the first GetTask without an
    answer (a failover lost it): the call is retried with the same Ask, so
    that the master can answer it the dispatch it made; the next call asks
    with the next number."""
    m, addr = fake([_range(0, 0, 2), _range(1, 2, 4)], drop_first_get=True)
    with Client(addr, name="t", progress_interval=0, min_backoff=0.001) as c:
        first, second = c.get_task(), c.get_task()
    assert (first["Index"], second["Index"]) == (0, 1)
    asks = [arg["Ask"] for method, arg in m.calls if method == "GetTask"]
    assert len(asks) == 3 and asks[0] == asks[1] and asks[2] == asks[1] + 1, asks
    with Client(addr, name="t") as other:  # another client: another random start
        other._call = lambda method, arg, within=None: arg
        assert other.get_task()["Ask"] != asks[2] + 1
