"""The trainer's side of the contract, with go/client's promises: report the
dataset, fetch tasks ahead in a background thread, yield their records,
report a task finished only once every record of it was consumed, report a
task failed when a block cannot be read, follow a failover (find the master
again, report the dataset again to a master that lost it, retry with
backoff on "master is not serving" and broken connections), and stop
cleanly when all passes are done."""

from __future__ import annotations

import functools
import itertools
import logging
import os
import queue
import random
import socket
import ssl
import threading
import time
from typing import Any, Callable, Dict, Iterator, List, NamedTuple, Optional, Sequence, Union

from . import recordio
from .errors import AllDone, ConnectionLost, MasterError, NoDataset, NoTask, NotServing
from .rpc import Connection

__all__ = ["Client", "Record", "MAX_ERROR_BYTES", "MAX_TRAINER_NAME_BYTES"]

log = logging.getLogger("trainmaster")

# The most of a failure reason the master keeps (go/wire.MaxErrorBytes).
MAX_ERROR_BYTES = 1024

# The most of a trainer's name the master keeps (go/wire.MaxTrainerNameBytes).
MAX_TRAINER_NAME_BYTES = 128

Task = Dict[str, Any]


class Record(NamedTuple):
    """One record, with the task and pass it came from; last is set on the
    last record of its task."""

    data: bytes
    task: int
    pass_: int
    last: bool


def _cut(raw: bytes, limit: int) -> str:
    """The first limit bytes of UTF-8 text, cut at a character boundary."""
    return raw[:limit].decode(errors="ignore")


def cut_reason(reason: str) -> str:
    """A failure reason cut to MAX_ERROR_BYTES, as go/wire.CutReason does."""
    raw = reason.encode()
    if len(raw) <= MAX_ERROR_BYTES:
        return reason
    return f"{_cut(raw, MAX_ERROR_BYTES)}... ({len(raw)} bytes, cut to {MAX_ERROR_BYTES})"


def trainer_name(name: Optional[str] = None) -> str:
    """The name a trainer sends with every task (wire.Task.Trainer): name,
    or by default "hostname-pid" (a DataLoader worker, a process of its own,
    has a name of its own), cut to MAX_TRAINER_NAME_BYTES at a UTF-8
    boundary. The master replaces control characters, if any."""
    if not name:
        name = f"{socket.gethostname()}-{os.getpid()}"
    return _cut(name.encode(errors="replace"), MAX_TRAINER_NAME_BYTES)


class Client:
    """Talks to the master for one trainer. resolver is the master's
    address ("host:port") or a callable returning it (discovery.EtcdResolver).
    name is the trainer's name, sent with every task for the master's
    per-trainer figures (default "hostname-pid"; see trainer_name).
    Safe to use from several threads; one connection, shared."""

    def __init__(self, resolver: Union[str, Callable[[], str]], *, token: Optional[str] = None,
                 tls: Optional[ssl.SSLContext] = None, server_name: Optional[str] = None, prefetch: int = 1,
                 min_backoff: float = 0.1, max_backoff: float = 5.0, call_timeout: float = 30.0,
                 name: Optional[str] = None) -> None:
        self._resolve = resolver if callable(resolver) else (lambda: resolver)
        self.name = trainer_name(name)
        self._token, self._tls, self._server_name = token, tls, server_name
        self.prefetch = max(prefetch, 1)
        self.min_backoff, self.max_backoff = min_backoff, max(max_backoff, min_backoff)
        self.call_timeout = call_timeout
        self._conn: Optional[Connection] = None
        self._mu = threading.Lock()
        self._dataset: Optional[List[str]] = None
        self._closed = threading.Event()

    # The contract's calls.

    def report_dataset(self, patterns: Sequence[str]) -> None:
        """Reports the dataset (glob patterns of RecordIO files); the first
        report accepted wins, later ones must name the same patterns."""
        self._dataset = list(patterns)
        self._call("ReportDataset", self._dataset)

    def get_task(self) -> Task:
        """Takes a task: a dict with Index, Epoch, Pass and Blocks. Raises
        NoTask when every task of the pass is out, AllDone at the end."""
        return self._call("GetTask", {"Trainer": self.name})

    def task_finished(self, task: Task) -> int:
        """Reports every record of task consumed; returns the report code."""
        return self._call("TaskFinished", self._report(task))

    def task_failed(self, task: Task, reason: str) -> int:
        """Reports task failed, with reason cut to MAX_ERROR_BYTES."""
        failed = self._report(task)
        failed["Error"] = cut_reason(reason)
        return self._call("TaskFailed", failed)

    def _report(self, task: Task) -> Task:
        """What is sent back of a task: its identity, never its blocks, and
        this trainer's name."""
        return {"Index": task["Index"], "Epoch": task["Epoch"], "Pass": task["Pass"], "Trainer": self.name}

    def status(self) -> Dict[str, Any]:
        """The master's progress (wire.Status as a dict)."""
        return self._call("Status", 0)

    def close(self) -> None:
        """Drops the connection and ends every call and records() loop."""
        self._closed.set()
        self._drop(None)

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # Retries, as go/client does them.

    def _backoff(self, attempt: int) -> None:
        wait = min(self.max_backoff, self.min_backoff * (2 ** min(attempt, 30)))
        if self._closed.wait(wait * random.uniform(0.5, 1.0)):
            raise ConnectionLost("client closed")

    def _connection(self) -> Connection:
        with self._mu:
            if self._conn is not None:
                return self._conn
        addr = self._resolve()
        conn = Connection(addr, timeout=self.call_timeout, tls=self._tls, server_name=self._server_name, token=self._token)
        with self._mu:
            if self._conn is None and not self._closed.is_set():
                self._conn = conn
                return conn
        conn.close()
        if self._closed.is_set():
            raise ConnectionLost("client closed")
        return self._connection()

    def _drop(self, conn: Optional[Connection]) -> None:
        with self._mu:
            if conn is None or self._conn is conn:
                conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def _call(self, method: str, arg: Any) -> Any:
        attempt = 0
        while True:
            if self._closed.is_set():
                raise ConnectionLost("client closed")
            conn = None
            try:
                conn = self._connection()
                return conn.call(method, arg)
            except (ConnectionLost, NotServing, LookupError, ConnectionError) as e:
                log.debug("trainmaster: %s failed (attempt %d), retrying: %s", method, attempt + 1, e)
                self._drop(conn)
            except NoDataset:
                if self._dataset is None or method == "ReportDataset":
                    raise
                log.info("trainmaster: the master lost the dataset; reporting it again")
                self._call("ReportDataset", self._dataset)
                continue
            self._backoff(attempt)
            attempt += 1

    # Records.

    def records(self, *, finish_when_read: bool = False) -> Iterator[Record]:
        """Yields the records of the tasks the master hands out, each task's
        in order, until all passes are done. A task is reported finished once
        its last record was yielded and the loop asks for more; a task left
        early is not (the master hands it out again). With finish_when_read
        a task is reported finished as soon as all of it is read, for a
        consumer that may stop asking for records until others have worked
        (a DataLoader worker, which the main process asks in turn): it must
        not hold tasks another trainer waits for at the end of a pass. Its
        records are then lost for the pass if the process dies before they
        are yielded. Tasks are fetched and read ahead in a background
        thread, prefetch at a time, and finishes are reported by another,
        so that the loop never waits for the master."""
        ahead: "queue.Queue[Any]" = queue.Queue(maxsize=self.prefetch)
        finished: "queue.Queue[Optional[Task]]" = queue.Queue()
        stop = threading.Event()
        end = object()

        def report() -> None:
            while (task := finished.get()) is not None:
                try:
                    self.task_finished(task)
                except (MasterError, ConnectionLost) as e:
                    log.warning("trainmaster: the finish of task %d was not recorded: %s", task["Index"], e)

        def fetch() -> None:
            attempt = 0
            try:
                while not stop.is_set():
                    try:
                        task = self.get_task()
                    except NoTask:
                        self._backoff(attempt)
                        attempt += 1
                        continue
                    except AllDone:
                        break
                    attempt = 0
                    try:
                        records = read_task(task)
                    except (recordio.RecordIOError, OSError) as e:
                        log.warning("trainmaster: task %d cannot be read, reporting it failed: %s", task["Index"], e)
                        self.task_failed(task, str(e))
                        continue
                    if finish_when_read:
                        self.task_finished(task)
                    while not stop.is_set():
                        try:
                            ahead.put((task, records), timeout=0.1)
                            break
                        except queue.Full:
                            continue
                ahead.put(end)
            except BaseException as e:  # handed to the consumer
                if not stop.is_set():
                    ahead.put(e)

        fetcher = threading.Thread(target=fetch, name="trainmaster-prefetch", daemon=True)
        reporter = threading.Thread(target=report, name="trainmaster-finishes", daemon=True)
        fetcher.start()
        reporter.start()
        try:
            while True:
                item = ahead.get()
                if item is end:
                    return
                if isinstance(item, BaseException):
                    raise item
                task, records = item
                yield from _task_records(task, records)
                if not finish_when_read:
                    finished.put(task)
        finally:
            stop.set()
            while fetcher.is_alive():
                try:
                    ahead.get(timeout=0.05)
                except queue.Empty:
                    pass
            finished.put(None)  # the finishes already queued are still sent
            reporter.join(self.call_timeout)


# Builds a Record from a tuple in C, without namedtuple's Python __new__:
# the per-record cost of the loop is what separates the client from a bare
# loop over the files.
_make_record = functools.partial(tuple.__new__, Record)


def _task_records(task: Task, records: List[bytes]) -> Iterator[Record]:
    n = len(records)
    lasts = itertools.chain(itertools.repeat(False, n - 1), (True,)) if n else ()
    return map(_make_record, zip(records, itertools.repeat(task["Index"], n), itertools.repeat(task["Pass"], n), lasts))


def read_task(task: Task) -> List[bytes]:
    """Reads every record of a task's blocks, checking each block holds the
    records the master says: a task is yielded only once all of it read
    cleanly."""
    records: List[bytes] = []
    for block in task.get("Blocks") or []:
        chunk = recordio.read_chunk(block["Path"], block["Offset"], block["Idx"])
        if len(chunk) != block["NumRecords"]:
            raise recordio.RecordIOError(
                f"recordio: {block['Path']}: chunk {block['Idx']} at offset {block['Offset']}: "
                f"record count mismatch: the master says {block['NumRecords']}, the chunk holds {len(chunk)}")
        records.extend(chunk)
    return records
