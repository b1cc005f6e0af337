"""torch's elastic agents meet at the master (go/wire/rendezvous.go): a
`RendezvousHandler` whose state the leading master keeps in etcd, so that
neither the death of any node nor the failover of the master ends the job.

An agent joins the run, then polls until its round is complete; rank 0 of
the round hosts the store the round's agents share (a TCPStore on a free
port of the address it reaches the master from) and publishes its
address, and the others connect to it. Between rounds a thread polls every
`poll_interval` seconds: the poll is the node's heartbeat, and the master
drops a node silent for the run's grace. `python -m trainmaster.run`
registers the handler as torchrun's `--rdzv_backend trainmaster`.
"""

from __future__ import annotations

import datetime
import logging
import os
import secrets
import socket
import threading
import time
from typing import Any, Callable, Dict, Optional, Tuple, Union

from torch.distributed import Store, TCPStore
from torch.distributed.elastic.rendezvous import (RendezvousClosedError, RendezvousError, RendezvousHandler,
                                                  RendezvousParameters, RendezvousTimeoutError)

from .calls import Calls
from .errors import MasterError

__all__ = ["MasterRendezvousHandler", "create_handler", "BACKEND"]

log = logging.getLogger("trainmaster")

BACKEND = "trainmaster"
SERVICE = "Rendezvous"
TEXT_CLOSED = "rendezvous closed"  # go/wire.TextRendezvousClosed


class MasterRendezvousHandler(RendezvousHandler):
    """The rendezvous run `run_id` at the master the resolver gives
    ("host:port", or a callable such as discovery.EtcdResolver), for
    min_nodes to max_nodes nodes: a round with min_nodes waits `last_call`
    seconds for more; a node silent for `grace` seconds is dropped."""

    def __init__(self, run_id: str, resolver: Union[str, Callable[[], str]], min_nodes: int, max_nodes: int, *,
                 last_call: float = 10.0, grace: float = 15.0, join_timeout: float = 600.0,
                 poll_interval: float = 0.5, token: Optional[str] = None, node: Optional[str] = None) -> None:
        self._calls = Calls(resolver, token=token, call_timeout=max(grace, 5.0))
        self._run_id = run_id
        self._node = node or f"{socket.getfqdn()}_{os.getpid()}_{secrets.token_hex(2)}"
        self._token = secrets.token_hex(16)
        self._shape = {"MinNodes": min_nodes, "MaxNodes": max_nodes,
                       "LastCallMs": int(last_call * 1000), "GraceMs": int(grace * 1000)}
        self._join_timeout = join_timeout
        self._poll_interval = poll_interval
        self._store: Optional[Store] = None  # the round's store; rank 0's hosts it
        self._view: Dict[str, Any] = {}
        self._attempt = 0  # numbers this agent's rounds: a Join retried after a failover is known as one
        self._beat: Optional[threading.Event] = None

    # The calls, each carrying the node and its token.

    def _call(self, method: str, **extra: Any) -> Dict[str, Any]:
        arg = {"Run": self._run_id, "Node": self._node, "Token": self._token, **extra}
        try:
            view = self._calls.call(f"{SERVICE}.{method}", arg, within=self._join_timeout)
        except MasterError as e:
            if TEXT_CLOSED in str(e):
                raise RendezvousClosedError(str(e)) from e
            raise RendezvousError(f"the master refused {method} of node {self._node}: {e}") from e
        except ConnectionError as e:
            raise RendezvousError(f"no master answered {method} of node {self._node}: {e}") from e
        self._view = view
        return view

    def _poll(self) -> Dict[str, Any]:
        return self._call("Poll")

    # RendezvousHandler.

    def get_backend(self) -> str:
        return BACKEND

    def get_run_id(self) -> str:
        return self._run_id

    def next_rendezvous(self) -> Tuple[Store, int, int]:
        self._stop_heartbeats()
        self._store = None
        self._attempt += 1
        deadline = time.monotonic() + self._join_timeout
        view = self._call("Join", **self._shape, Attempt=self._attempt)
        while not (view["Complete"] and view["Participant"]):
            if time.monotonic() > deadline:
                raise RendezvousTimeoutError(f"node {self._node}: no round of run {self._run_id} within "
                                             f"{self._join_timeout:g} s (last view {view})")
            if view["Closed"]:
                raise RendezvousClosedError(f"run {self._run_id} is closed")
            if not view["Participant"] and not view["Queued"] and not view["Complete"]:
                view = self._call("Join", **self._shape, Attempt=self._attempt)  # dropped, or left out of a full round
                continue
            time.sleep(self._poll_interval)
            view = self._poll()
        rank, world = view["Rank"], view["World"]
        self._store = self._round_store(rank, deadline)
        log.info("trainmaster: node %s joined round %d of run %s as rank %d of %d", self._node, view["Round"],
                 self._run_id, rank, world)
        self._start_heartbeats()
        return self._store, rank, world

    def _round_store(self, rank: int, deadline: float) -> Store:
        """The round's store: hosted here by rank 0, which publishes its
        address; the others wait for it and connect."""
        timeout = datetime.timedelta(seconds=max(self._join_timeout, 60))
        if rank == 0:
            host = self._reachable_host()
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                s.bind((host, 0))
                port = s.getsockname()[1]
            store = TCPStore(host, port, is_master=True, timeout=timeout, wait_for_workers=False)
            self._call("Publish", Store=f"{host}:{port}")
            return store
        view = self._view
        while not view.get("Store"):
            if time.monotonic() > deadline:
                raise RendezvousTimeoutError(f"node {self._node}: rank 0 of round {view['Round']} published no store")
            time.sleep(self._poll_interval)
            view = self._poll()
        host, _, port = view["Store"].rpartition(":")
        return TCPStore(host, int(port), is_master=False, timeout=timeout)

    def _reachable_host(self) -> str:
        """The address this node reaches the master from: the one the
        round's other nodes can reach it at, too, on a shared network."""
        host, _, port = self._calls.resolve().rpartition(":")
        with socket.create_connection((host.strip("[]"), int(port)), timeout=10) as s:
            return s.getsockname()[0]

    def is_closed(self) -> bool:
        return bool(self._poll()["Closed"])

    def set_closed(self) -> None:
        self._call("Close", Why="set closed by the agent")

    def num_nodes_waiting(self) -> int:
        return int(self._poll()["Waiting"])

    def shutdown(self) -> bool:
        self._stop_heartbeats()
        try:
            self._call("Close", Why="the agent shut down")
            return True
        except RendezvousError as e:
            log.warning("trainmaster: node %s could not close run %s: %s", self._node, self._run_id, e)
            return False
        finally:
            self._calls.close()

    # Heartbeats while the round runs.

    def _start_heartbeats(self) -> None:
        stop = threading.Event()
        self._beat = stop

        def beat() -> None:
            while not stop.wait(self._poll_interval):
                try:
                    self._poll()
                except RendezvousError as e:
                    log.warning("trainmaster: heartbeat of node %s: %s", self._node, e)

        threading.Thread(target=beat, name=f"trainmaster-rdzv-{self._node}", daemon=True).start()

    def _stop_heartbeats(self) -> None:
        if self._beat is not None:
            self._beat.set()
            self._beat = None


def create_handler(params: RendezvousParameters) -> MasterRendezvousHandler:
    """torchrun's constructor of the backend: --rdzv_endpoint is the
    master's address, or etcd endpoints (etcd://host:port,host:port) to
    find the leading master through; --rdzv_conf takes last_call, grace,
    join_timeout, poll_interval (seconds) and token_file."""
    endpoint = params.endpoint
    resolver: Union[str, Callable[[], str]] = endpoint
    if endpoint.startswith("etcd://"):
        from .discovery import EtcdResolver
        hosts = endpoint[len("etcd://"):].split(",")
        resolver = EtcdResolver([h if "://" in h else f"http://{h}" for h in hosts], params.get("namespace", ""))
    token = None
    if params.get("token_file"):
        with open(params.get("token_file")) as f:
            token = f.read().strip()
    return MasterRendezvousHandler(params.run_id, resolver, params.min_nodes, params.max_nodes,
                                   last_call=params.get_as_int("last_call", 10), grace=params.get_as_int("grace", 15),
                                   join_timeout=params.get_as_int("join_timeout", 600),
                                   poll_interval=float(params.get("poll_interval", 0.5)), token=token)
