"""A call without a reply asks the resolver, every MOVED_CHECK, whether the
master moved (go/client moved): a master frozen by SIGSTOP keeps its
connections open and answers nothing, and the call follows its successor
instead of waiting for call_timeout."""

from __future__ import annotations

import json
import logging
import os
import signal
import socketserver
import threading
import time
from typing import List

import pytest

from conftest import SERVING, write_dataset
from trainmaster import Client, ConnectionLost, EtcdResolver, calls


def test_a_call_follows_a_leader_frozen_by_sigstop(tmp_path, etcd, master, caplog):
    caplog.set_level(logging.INFO, logger="trainmaster")
    # Several tasks: the leader may commit the dispatch of one just before it
    # stops, and the call, moved to the standby, then gets another.
    pattern = write_dataset(tmp_path / "data", 2, 100)
    leader, addr = master("-passes", "1", "-chunks-per-task", "1")  # -ttl 2: the standby leads 2 s after the leader froze
    standby, _ = master("-passes", "1", "-chunks-per-task", "1", wait=False)
    standby.wait_for(r"standing by")
    with Client(EtcdResolver([etcd]), call_timeout=30, min_backoff=0.05, max_backoff=0.5) as c:
        c.report_dataset([pattern])
        assert c._calls.conn is not None and c._calls.conn.addr == addr  # the call below goes to the leader
        leader.p.send_signal(signal.SIGSTOP)
        # The signal is delivered asynchronously: until the leader has
        # stopped it could still answer the call below.
        os.waitpid(leader.p.pid, os.WUNTRACED)
        try:
            start = time.monotonic()
            task = c.get_task()
            took = time.monotonic() - start
            moved = standby.wait_for(SERVING).group(1)
        finally:
            leader.p.kill()  # SIGKILL ends a stopped process too
            leader.p.wait()
        assert task["Epoch"] > 0 and task["Blocks"]
        assert took < c.call_timeout / 2, f"the call took {took:.1f} s: it waited for the frozen leader"
        assert c._calls.conn is not None and c._calls.conn.addr == moved != addr
        assert f"the master is now at {moved}" in caplog.text


class _Master(socketserver.ThreadingTCPServer):
    """A JSON-RPC master on loopback that answers every call with its name,
    once release is set (at once by default), or, frozen, reads the calls
    and answers none (as a stopped process, whose connections stay open);
    it counts the connections it saw and those the client closed."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, name: str) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.name = name
        self.release = threading.Event()
        self.release.set()
        self.frozen = False
        self.connections = 0
        self.closed = threading.Semaphore(0)

    @property
    def addr(self) -> str:
        return "%s:%d" % self.server_address


class _Handler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        self.server.connections += 1
        for line in self.rfile:
            req = json.loads(line)
            if self.server.frozen:
                continue
            self.server.release.wait()
            self.wfile.write(json.dumps({"id": req["id"], "result": self.server.name, "error": None}).encode() + b"\n")
        self.server.closed.release()


@pytest.fixture
def masters():
    started: List[_Master] = []

    def start(name: str) -> _Master:
        m = _Master(name)
        threading.Thread(target=m.serve_forever, daemon=True).start()
        started.append(m)
        return m

    yield start
    for m in started:
        m.release.set()
        m.shutdown()
        m.server_close()


def test_a_call_without_a_reply_follows_the_master_the_resolver_now_names(monkeypatch, masters):
    monkeypatch.setattr(calls, "MOVED_CHECK", 0.05)
    frozen, standby = masters("frozen"), masters("standby")
    frozen.frozen = True
    asked: List[str] = []

    def resolve() -> str:
        asked.append("")
        return frozen.addr if len(asked) == 1 else standby.addr  # the first finds the master before it froze

    with Client(resolve, call_timeout=30, min_backoff=0.01, max_backoff=0.05) as c:
        start = time.monotonic()
        assert c.status() == "standby"
        assert time.monotonic() - start < 15
        assert c._calls.conn is not None and c._calls.conn.addr == standby.addr
        # The connection to the frozen master was dropped: a reply it sends
        # late cannot answer another call.
        assert frozen.closed.acquire(timeout=10)
        assert c.status() == "standby"
        assert (frozen.connections, standby.connections) == (1, 1)


def test_a_call_waits_on_while_the_resolver_names_the_same_master(monkeypatch, masters):
    monkeypatch.setattr(calls, "MOVED_CHECK", 0.05)
    slow = masters("slow")
    slow.release.clear()
    asked: List[str] = []

    def resolve() -> str:
        asked.append("")
        if len(asked) == 4:  # the first dials; then three checks that find the master where it was
            slow.release.set()
        return slow.addr

    with Client(resolve, call_timeout=30) as c:
        assert c.status() == "slow"
        assert len(asked) == 4
        assert c.status() == "slow"  # the same connection, its replies in step
        assert slow.connections == 1


def test_a_fixed_address_is_never_resolved_again(monkeypatch, masters):
    monkeypatch.setattr(calls, "MOVED_CHECK", 0.05)
    slow = masters("slow")
    with Client(slow.addr, call_timeout=30) as c:
        assert c.status() == "slow"  # connected
        resolved: List[str] = []
        c._calls.resolve = lambda: resolved.append("") or slow.addr  # type: ignore[assignment]
        checks: List[str] = []
        moved = c._calls.moved

        def counted(conn, give_up=None):
            checks.append(conn.addr)
            if len(checks) == 3:
                slow.release.set()
            return moved(conn, give_up)

        monkeypatch.setattr(c._calls, "moved", counted)
        slow.release.clear()
        assert c.status() == "slow"
        assert checks == [slow.addr] * 3 and resolved == [] and slow.connections == 1


def test_a_call_within_a_time_gives_up_on_a_frozen_master(monkeypatch, masters):
    # The check of a task that waited in the prefetch queue is such a call:
    # a master that cannot answer in time does not stop the training.
    monkeypatch.setattr(calls, "MOVED_CHECK", 0.05)
    frozen = masters("frozen")
    with Client(frozen.addr, call_timeout=30, min_backoff=0.01, max_backoff=0.05) as c:
        assert c.status() == "frozen"
        frozen.frozen = True
        start = time.monotonic()
        with pytest.raises(ConnectionLost):
            c.task_progress({"Index": 1, "Epoch": 1, "Pass": 0}, 0, within=0.3)
        assert time.monotonic() - start < 5, "the call waited past its time"
