"""Calls to the master and their retries: one JSON-RPC connection, shared,
dialled to the address the resolver gives; a call that fails on the
connection, or is answered "master is not serving", is retried with
backoff on a new connection; a call without a reply asks the resolver
whether the master moved; a call answered "dataset not reported" reports or
declares its dataset again and is retried. These are go/client's promises
(doc/protocol.md); the error texts they act on are the contract's
(go/wire/testdata/contract.json)."""

from __future__ import annotations

import functools
import logging
import random
import ssl
import threading
import time
from typing import Any, Callable, Dict, Optional, Tuple, Union

from .errors import ConnectionLost, NoDataset, NotServing
from .rpc import Connection
from .wire import DEFAULT_DATASET

__all__ = ["Calls", "MOVED_CHECK", "MAX_REDECLARES"]

log = logging.getLogger("trainmaster")

# How long a call waits for its reply, in seconds, before it asks the
# resolver whether the master moved, and how often it asks again: a master
# frozen (SIGSTOP, a hung host) keeps its connections open and answers
# nothing, and a standby serves in its place after its lease (a few
# seconds), long before call_timeout. Only a callable resolver is asked.
MOVED_CHECK = 2.0

# How many times one call reports or declares its dataset again to a master
# answering "dataset not reported" before it raises NoDataset: a master
# that lost the dataset (a failover onto an empty store) takes it again at
# once, so answering so again means something else is wrong.
MAX_REDECLARES = 3

# The calls that are about no dataset, or declare one.
_ABOUT_NONE = frozenset({"ReportDataset", "DeclareDataset", "Authenticate"})


def about(method: str, arg: Any) -> Optional[str]:
    """The dataset a call is about; None for a report, a declaration or
    Authenticate."""
    if method in _ABOUT_NONE:
        return None
    if method == "DatasetStatus":
        return arg or DEFAULT_DATASET
    if isinstance(arg, dict):
        return arg.get("Dataset") or DEFAULT_DATASET
    return DEFAULT_DATASET


class Calls:
    """The calls of one client. resolver is the master's address
    ("host:port") or a callable returning it; a call waits call_timeout
    seconds for its reply. Safe to use from several threads."""

    def __init__(self, resolver: Union[str, Callable[[], str]], *, token: Optional[str] = None,
                 tls: Optional[ssl.SSLContext] = None, server_name: Optional[str] = None,
                 min_backoff: float = 0.1, max_backoff: float = 5.0, call_timeout: float = 30.0) -> None:
        self.resolve: Callable[[], str] = resolver if callable(resolver) else (lambda: resolver)
        self._follows = callable(resolver)  # a fixed address cannot move: nothing to ask
        self._token, self._tls, self._server_name = token, tls, server_name
        self.min_backoff, self.max_backoff = min_backoff, max(max_backoff, min_backoff)
        self.call_timeout = call_timeout
        self._mu = threading.Lock()  # guards conn
        self.conn: Optional[Connection] = None  # the current connection; None: dial on the next call
        # What was reported or declared of each dataset, by name: the method
        # and its argument, sent again to a master that answers "dataset not
        # reported" for it.
        self.declared: Dict[str, Tuple[str, Any]] = {}
        self.closed = threading.Event()

    def remember(self, dataset: str, method: str, arg: Any) -> None:
        """Keeps what reported or declared dataset, accepted, to send it
        again to a master that lost it."""
        self.declared[dataset] = (method, arg)

    def close(self) -> None:
        """Drops the connection and ends every call and backoff."""
        self.closed.set()
        self._drop(None)

    def backoff(self, attempt: int) -> None:
        """Sleeps before attempt number attempt (from 0) again: doubling
        from min_backoff up to max_backoff, jittered; ConnectionLost once
        the client is closed."""
        wait = min(self.max_backoff, self.min_backoff * (2 ** min(attempt, 30)))
        if self.closed.wait(wait * random.uniform(0.5, 1.0)):
            raise ConnectionLost("client closed")

    def call(self, method: str, arg: Any, *, within: Optional[float] = None) -> Any:
        """Calls Master.<method> with arg and returns the result, retrying
        as the module says until it is answered, the client is closed
        (ConnectionLost), or, with within, that many seconds have passed
        (ConnectionLost). The master's other errors are raised as the
        contract's exceptions."""
        give_up = None if within is None else time.monotonic() + within
        every = MOVED_CHECK if within is None else min(MOVED_CHECK, within)
        attempt = redeclared = 0
        while True:
            if self.closed.is_set():
                raise ConnectionLost("client closed")
            if give_up is not None and time.monotonic() >= give_up:
                raise ConnectionLost(f"{method}: no answer within {within} s")
            conn = None
            try:
                conn = self._connection()
                return conn.call(method, arg, overdue=functools.partial(self.moved, conn, give_up), every=every)
            except (ConnectionLost, NotServing, LookupError, ConnectionError) as e:
                log.debug("trainmaster: %s failed (attempt %d), retrying: %s", method, attempt + 1, e)
                self._drop(conn)
            except NoDataset:
                if redeclared >= MAX_REDECLARES or not self._declare_again(method, arg):
                    raise
                redeclared += 1
                continue
            self.backoff(attempt)
            attempt += 1

    def _declare_again(self, method: str, arg: Any) -> bool:
        """Reports or declares again the dataset of a call answered "dataset
        not reported", if it was reported or declared; says whether it was."""
        dataset = about(method, arg)
        declared = self.declared.get(dataset) if dataset is not None else None
        if declared is None:
            return False
        log.info("trainmaster: the master lost dataset %s; %s it again", dataset,
                 "reporting" if declared[0] == "ReportDataset" else "declaring")
        self.call(*declared)
        return True

    def moved(self, conn: Connection, give_up: Optional[float] = None) -> Optional[str]:
        """Why a call on conn still without a reply is to be given up: the
        client was closed, the call's time (give_up, a monotonic instant)
        is over, or the resolver now gives another address than the one
        conn was dialled at; None to wait on, also when the resolver cannot
        tell (a master whose lease expired has unpublished its address, and
        its successor has not published yet) and when the address is fixed
        (nothing to ask)."""
        if self.closed.is_set():
            return "client closed"
        if give_up is not None and time.monotonic() >= give_up:
            return "no answer in time"
        if not self._follows:
            return None
        with self._mu:
            if self.conn is not conn:
                return None
        try:
            now = self.resolve()
        except Exception as e:  # noqa: BLE001 (no answer: keep waiting)
            log.debug("trainmaster: no reply yet from %s, and the resolver cannot tell where the master is: %s",
                      conn.addr, e)
            return None
        if now == conn.addr:
            return None
        log.info("trainmaster: no reply yet from %s, and the master is now at %s; calling it there", conn.addr, now)
        return f"no reply yet, and the master is now at {now}"

    def _connection(self) -> Connection:
        """The current connection, dialled to the resolved address when
        there is none; ConnectionLost once the client is closed."""
        while True:
            with self._mu:
                if self.conn is not None:
                    return self.conn
            conn = Connection(self.resolve(), timeout=self.call_timeout, tls=self._tls,
                              server_name=self._server_name, token=self._token)
            with self._mu:
                if self.conn is None and not self.closed.is_set():
                    self.conn = conn
                    return conn
            conn.close()  # another call connected first, or the client was closed
            if self.closed.is_set():
                raise ConnectionLost("client closed")

    def _drop(self, conn: Optional[Connection]) -> None:
        """Closes conn and forgets it if it is the current connection;
        None: the current one, whichever it is."""
        with self._mu:
            if conn is None or self.conn is conn:
                conn, self.conn = self.conn, None
        if conn is not None:
            conn.close()
