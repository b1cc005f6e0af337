"""The trainer's side of the contract, with go/client's promises: report the
dataset (or declare a named one: files, or an index range whose records the
trainer maps to its own storage), fetch tasks ahead in a background thread,
yield their records,
report a task finished only once every record of it was consumed, report a
task failed when a block cannot be read, follow a failover (find the master
again, report or declare the dataset again to a master that lost it, retry with
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
from typing import Any, Callable, Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple, Union

from . import recordio
from .errors import AllDone, ConnectionLost, MasterError, NoDataset, NoTask, NotServing
from .rpc import Connection
from .shuffle import in_training_order, shuffle

__all__ = ["Client", "Record", "DEFAULT_DATASET", "MAX_ERROR_BYTES", "MAX_TRAINER_NAME_BYTES", "task_indexes"]

log = logging.getLogger("trainmaster")

# The dataset of calls that name none (go/wire.DefaultDataset): the one
# report_dataset reports.
DEFAULT_DATASET = "train"

# How many times one call re-declares its dataset to a master answering
# "dataset not reported" before it gives up and raises NoDataset: a master
# that lost the dataset (a failover onto an empty store) takes it again at
# once, so answering so again means something else is wrong.
_MAX_REDECLARES = 3

# The most of a failure reason the master keeps (go/wire.MaxErrorBytes).
MAX_ERROR_BYTES = 1024

# The most of a trainer's name the master keeps (go/wire.MaxTrainerNameBytes).
MAX_TRAINER_NAME_BYTES = 128

# Report codes (go/wire.Report): recorded, and too soon (nothing changed);
# and those that say a task is no longer this trainer's.
_RECORDED, _TOO_SOON = 1, 5
_ALREADY_DONE, _STALE_PASS, _SUPERSEDED = 2, 3, 4

# How often records() reports progress inside a task, by default
# (go/wire.DefaultProgressInterval), in seconds.
DEFAULT_PROGRESS_INTERVAL = 10.0

# How long a task waits in the prefetch queue, in seconds, before records()
# checks with the master that it is still this trainer's (go/client
# checkAfter): the master may have handed a task that waited behind a
# straggling one to an idle trainer (its -stragglers). The check is a
# progress report that moves nothing: no write on the master, one round
# trip per such task.
_CHECK_AFTER = 1.0

# How long the check of a task that waited waits for the master's answer,
# in seconds (go/client checkWait): a master that cannot answer in time (a
# failover, an outage) does not stop the training of a task read ahead.
_CHECK_WAIT = 2.0

# How long a call waits for its reply, in seconds, before the client asks
# the resolver whether the master moved, and how often it asks again
# (go/client movedCheck): a master frozen (SIGSTOP, a hung host) keeps its
# connections open and answers nothing, and a standby serves in its place
# after its lease (a few seconds), long before call_timeout. A call whose
# master moved is given up on its connection, which is dropped, and
# retried at the new address. Only a client that resolves the address
# asks; calls take milliseconds, so almost none waits this long.
_MOVED_CHECK = 2.0

Task = Dict[str, Any]


class Record(NamedTuple):
    """One record, with the task and pass it came from. task is, for a
    piece of a task (a task dict with Piece set: the master cut a
    straggler's rest off for an idle trainer), the task it was cut from
    (its Of). last is set on the last record of its task; for a task the
    master cuts short while it is yielded (its progress report answered
    with a To), on the record at the cut (position To-1) when the loop
    learns the cut before yielding that record; a task whose cut the loop
    learns once past it ends without one. position is the record's place
    in its task's record order, from 0 (wire.Progress): a task handed out
    again after a fault, or a piece, starts past 0.

    For a task of an index-range dataset (declared with records= and
    records_per_task=: the task carries Start and End, no blocks) the client
    reads nothing: data is None and index is the record's index in the
    dataset, Start + position (Start + shuffle(End - Start, Seed)[position]
    for a task with a Seed), for the trainer to read from its own storage
    (see Files). For a record of a RecordIO task index is None."""

    data: Optional[bytes]
    task: int
    pass_: int
    last: bool
    position: int
    index: Optional[int] = None


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
    or by default "hostname-pid-xxxx", xxxx four hex digits drawn at each
    call (a DataLoader worker, a process of its own, has a name of its own;
    a trainer restarted with the same pid, as in a container, does not take
    its predecessor's, whose tasks the master would then wait for), cut to
    MAX_TRAINER_NAME_BYTES at a UTF-8 boundary. The master replaces control
    characters, if any."""
    if not name:
        name = f"{socket.gethostname()}-{os.getpid()}-{random.getrandbits(16):04x}"
    return _cut(name.encode(errors="replace"), MAX_TRAINER_NAME_BYTES)


class Client:
    """Talks to the master for one trainer. resolver is the master's
    address ("host:port") or a callable returning it (discovery.EtcdResolver).
    name is the trainer's name, sent with every task for the master's
    per-trainer figures (default "hostname-pid-xxxx"; see trainer_name).
    Safe to use from several threads; one connection, shared.
    progress_interval is how often records() reports how far it got in a
    task (seconds; 0 or less: never), so that after a fault the task's next
    dispatch starts there (wire.Progress). A call waits call_timeout
    (seconds) for its reply; with a callable resolver, a call without a
    reply for 2 s asks it whether the master moved (a frozen master answers
    nothing), and every 2 s again, and follows it at once if so.
    dataset is the name of the dataset this client trains (default
    "train", the one report_dataset reports): its tasks are the ones
    get_task asks for and records() yields, and every task and progress
    report it sends names it; declare() declares it, start_round() and
    dataset_status() are about it."""

    def __init__(self, resolver: Union[str, Callable[[], str]], *, token: Optional[str] = None,
                 tls: Optional[ssl.SSLContext] = None, server_name: Optional[str] = None, prefetch: int = 1,
                 min_backoff: float = 0.1, max_backoff: float = 5.0, call_timeout: float = 30.0,
                 name: Optional[str] = None, progress_interval: float = DEFAULT_PROGRESS_INTERVAL,
                 dataset: str = DEFAULT_DATASET) -> None:
        if not isinstance(dataset, str):
            raise TypeError(f"dataset is a dataset's name, not {type(dataset).__name__} "
                            "(report the files of train with report_dataset)")
        self._resolve = resolver if callable(resolver) else (lambda: resolver)
        self._follows = callable(resolver)  # a fixed address cannot move: nothing to ask
        self.name = trainer_name(name)
        self._token, self._tls, self._server_name = token, tls, server_name
        self.prefetch = max(prefetch, 1)
        self.min_backoff, self.max_backoff = min_backoff, max(max_backoff, min_backoff)
        self.call_timeout = call_timeout
        self.progress_interval = progress_interval
        self._conn: Optional[Connection] = None
        self._mu = threading.Lock()
        self.dataset = dataset or DEFAULT_DATASET
        # What was reported or declared of each dataset, by name: the method
        # and its argument, sent again to a master that answers "dataset not
        # reported" for it.
        self._declared: Dict[str, Tuple[str, Any]] = {}
        self._closed = threading.Event()

    # The contract's calls.

    def report_dataset(self, patterns: Sequence[str]) -> None:
        """Reports the dataset train (glob patterns of RecordIO files); the
        first report accepted wins, later ones must name the same patterns.
        Once accepted it is remembered, and reported again to a master that
        lost it."""
        self._call("ReportDataset", list(patterns))
        self._declared[DEFAULT_DATASET] = ("ReportDataset", list(patterns))

    def declare(self, name: Optional[str] = None, *, patterns: Optional[Sequence[str]] = None,
                records: Optional[int] = None, records_per_task: Optional[int] = None,
                chunks_per_task: Optional[int] = None, passes: Optional[int] = None) -> None:
        """Declares a named dataset (Master.DeclareDataset; name defaults to
        this client's dataset): RecordIO files (patterns, cut into tasks of
        chunks_per_task chunks), or an index-range dataset of records
        records cut into tasks of records_per_task, whose tasks carry the
        range of record indexes [Start, End) they cover and whose records
        records() yields as indexes (Record.index). passes is how many
        passes a round runs. A field not given (or 0) is left to the
        master (its -chunks-per-task, -passes). The first declaration of a
        name decides it; a later one must describe the same dataset, or is
        refused (MasterError naming both). A declaration accepted is
        remembered and sent again to a master that answers "dataset not
        reported" for that dataset, as report_dataset's patterns are."""
        name = name or self.dataset
        d: Dict[str, Any] = {"Name": name}
        for key, value in (("Patterns", list(patterns) if patterns is not None else None),
                           ("ChunksPerTask", chunks_per_task), ("Records", records),
                           ("RecordsPerTask", records_per_task), ("Passes", passes)):
            if value:
                d[key] = value
        self._call("DeclareDataset", d)
        self._declared[name] = ("DeclareDataset", d)

    def start_round(self, round: int) -> int:  # noqa: A002 (the contract's name)
        """Starts round `round` of this client's dataset (Master.StartRound):
        its passes run again, round r being the r-th run from 0 (the
        declaration starts round 0). Idempotent: a round already started is
        not started again, so every trainer may ask. Returns the round now
        current; raises RoundRunning when the current round is not over
        (ask again once it is), MasterError for a round further ahead."""
        return self._call("StartRound", {"Dataset": self.dataset, "Round": round})

    def dataset_status(self, name: Optional[str] = None) -> Dict[str, Any]:
        """The progress of a dataset (Master.DatasetStatus; default this
        client's): wire.Status as a dict, with Dataset, its Round and the
        names of every dataset of the job (Datasets); the master omits the
        fields that are zero or empty (Round 0, Dataset "train"). A dataset
        the job lacks shows DatasetReported False (it is not re-declared)."""
        return self._call("DatasetStatus", name or self.dataset)

    def get_task(self) -> Task:
        """Takes a task of this client's dataset: a dict with Index, Epoch,
        Pass and Blocks (or, for an index-range dataset, Start and End: the
        record indexes [Start, End) it covers), and maybe From and To (the
        positions to start and stop at), Piece and Of (a piece of task Of,
        cut off a straggler: wire.Task), Seed and Dataset (omitted for
        train). Raises NoTask when every task of the pass is out, AllDone
        at the end."""
        return self._call("GetTask", self._named({"Trainer": self.name}, self.dataset))

    def task_finished(self, task: Task) -> int:
        """Reports every record of task consumed; returns the report code."""
        return self._call("TaskFinished", self._report(task))

    def task_failed(self, task: Task, reason: str) -> int:
        """Reports task failed, with reason cut to MAX_ERROR_BYTES."""
        failed = self._report(task)
        failed["Error"] = cut_reason(reason)
        return self._call("TaskFailed", failed)

    def task_progress(self, task: Task, done: int, *, within: Optional[float] = None) -> Dict[str, int]:
        """Reports the records of task's order before position done trained
        (wire.Progress); returns the master's answer (wire.ProgressReply):
        {"Report": code, "To": n}. Report is the report code (1 recorded,
        2 already done, 3 stale pass, 4 superseded, 5 too soon); To, when
        above 0, is where this dispatch of task is to stop: the position
        past the last record it is to train (the master cut the rest off as
        a piece for an idle trainer); 0: the task's end, unchanged. With
        within, the call gives up (ConnectionLost) after that many seconds
        without an answer instead of retrying until the master answers."""
        progress = {"Index": task["Index"], "Epoch": task["Epoch"], "Pass": task["Pass"], "Trainer": self.name,
                    "Done": done}
        reply = self._call("TaskProgress", self._named(progress, self._dataset_of(task)), within=within)
        return {"Report": reply.get("Report", 0), "To": reply.get("To") or 0}

    def _report(self, task: Task) -> Task:
        """What is sent back of a task: its identity, never its blocks, this
        trainer's name and the task's dataset."""
        return self._named({"Index": task["Index"], "Epoch": task["Epoch"], "Pass": task["Pass"], "Trainer": self.name},
                           self._dataset_of(task))

    def _dataset_of(self, task: Task) -> str:
        """The dataset of a task: the one the master named in it (it omits
        train), else this client's."""
        return task.get("Dataset") or self.dataset

    @staticmethod
    def _named(arg: Dict[str, Any], dataset: str) -> Dict[str, Any]:
        """arg naming dataset; train is left unnamed, as the master's replies
        leave it (the contract's default), so that what a train trainer
        sends is what it sent before named datasets."""
        if dataset != DEFAULT_DATASET:
            arg["Dataset"] = dataset
        return arg

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

    def _moved(self, conn: Connection, give_up: Optional[float] = None) -> Optional[str]:
        """Why a call on conn still without a reply is to be given up: the
        client was closed, the call's time (give_up, a monotonic instant)
        is over, or the resolver now gives another address than
        the one conn was dialled at (go/client moved); None to wait on, also
        when the resolver cannot tell (a master whose lease expired has
        unpublished its address, and its successor has not published yet)
        and when the address is fixed (nothing to ask)."""
        if self._closed.is_set():
            return "client closed"
        if give_up is not None and time.monotonic() >= give_up:
            return "no answer in time"
        if not self._follows:
            return None
        with self._mu:
            if self._conn is not conn:
                return None
        try:
            now = self._resolve()
        except Exception as e:  # noqa: BLE001 (no answer: keep waiting)
            log.debug("trainmaster: no reply yet from %s, and the resolver cannot tell where the master is: %s",
                      conn.addr, e)
            return None
        if now == conn.addr:
            return None
        log.info("trainmaster: no reply yet from %s, and the master is now at %s; calling it there", conn.addr, now)
        return f"no reply yet, and the master is now at {now}"

    @staticmethod
    def _about(method: str, arg: Any) -> Optional[str]:
        """The dataset a call is about; None for a report or declaration."""
        if method in ("ReportDataset", "DeclareDataset", "Authenticate"):
            return None
        if method == "DatasetStatus":
            return arg or DEFAULT_DATASET
        if isinstance(arg, dict):
            return arg.get("Dataset") or DEFAULT_DATASET
        return DEFAULT_DATASET

    def _call(self, method: str, arg: Any, *, within: Optional[float] = None) -> Any:
        give_up = None if within is None else time.monotonic() + within
        attempt = 0
        redeclared = 0
        while True:
            if self._closed.is_set():
                raise ConnectionLost("client closed")
            if give_up is not None and time.monotonic() >= give_up:
                raise ConnectionLost(f"{method}: no answer within {within} s")
            conn = None
            try:
                conn = self._connection()
                return conn.call(method, arg, overdue=functools.partial(self._moved, conn, give_up),
                                 every=_MOVED_CHECK if within is None else min(_MOVED_CHECK, within))
            except (ConnectionLost, NotServing, LookupError, ConnectionError) as e:
                log.debug("trainmaster: %s failed (attempt %d), retrying: %s", method, attempt + 1, e)
                self._drop(conn)
            except NoDataset:
                about = self._about(method, arg)
                declared = self._declared.get(about) if about is not None else None
                if declared is None or redeclared >= _MAX_REDECLARES:
                    raise
                redeclared += 1
                log.info("trainmaster: the master lost dataset %s; %s it again", about,
                         "reporting" if declared[0] == "ReportDataset" else "declaring")
                self._call(*declared)
                continue
            self._backoff(attempt)
            attempt += 1

    # Records.

    def records(self, *, finish_when_read: bool = False) -> Iterator[Record]:
        """Yields the records of the tasks the master hands out, each task's
        in order, until all passes are done. A task is reported finished once
        its last record was yielded and the loop asks for more; a task left
        early is not (the master hands it out again). A task the master cuts
        short while it is yielded, to hand its rest to an idle trainer (its
        -stragglers split), stops where it was cut, its record at the cut
        marked last if the cut was learned before it was yielded (a loop
        already past the cut stops at once, without one), and is reported
        finished too. A task that waited at least a second in the prefetch
        queue is first checked with the master (when progress is reported):
        one that went to another trainer meanwhile is skipped, and not
        reported finished; one cut short meanwhile is cut. With finish_when_read
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
                    fetched = time.monotonic()
                    attempt = 0
                    ranged = is_range(task)
                    try:
                        # A range task's "records" are its record indexes.
                        records: List[Any] = task_indexes(task) if ranged else in_training_order(task, read_task(task))
                    except (recordio.RecordIOError, OSError, _BadRange) as e:
                        log.warning("trainmaster: task %d cannot be read, reporting it failed: %s", task["Index"], e)
                        self.task_failed(task, str(e))
                        continue
                    if finish_when_read:
                        self.task_finished(task)
                    while not stop.is_set():
                        try:
                            ahead.put((task, records, fetched, ranged), timeout=0.1)
                            break
                        except queue.Full:
                            continue
                ahead.put(end)
            except BaseException as e:  # handed to the consumer
                if not stop.is_set():
                    ahead.put(e)

        position = _Position(self)
        reporting = self.progress_interval > 0 and not finish_when_read
        fetcher = threading.Thread(target=fetch, name="trainmaster-prefetch", daemon=True)
        reporter = threading.Thread(target=report, name="trainmaster-finishes", daemon=True)
        progress = threading.Thread(target=position.run, args=(stop,), name="trainmaster-progress", daemon=True)
        fetcher.start()
        reporter.start()
        if reporting:
            progress.start()
        try:
            while True:
                item = ahead.get()
                if item is end:
                    return
                if isinstance(item, BaseException):
                    raise item
                task, records, fetched, ranged = item
                if reporting and time.monotonic() - fetched >= _CHECK_AFTER:
                    checked = position.check(task)
                    if checked is None:
                        continue  # another trainer's now: neither trained nor reported finished
                    task = checked
                yield from position.begin(task, records, ranged)
                if not position.end() and not finish_when_read:
                    finished.put(task)
        finally:
            stop.set()
            if progress.is_alive():
                progress.join(self.call_timeout)
            if reporting:
                position.report()  # the task left in the middle, if any
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


class _Position:
    """How far a records() loop got in the task it yields, reported by a
    thread of its own every progress_interval (wire.Progress). The records
    are yielded in C from a list iterator: the position is read off that
    iterator (its length hint is what is left), so following it costs the
    loop nothing per record. A record counts as trained once yielded. A
    report answered superseded, already done or stale pass says the task is
    no longer this trainer's: the iterator is run to its end, so the loop
    stops yielding the task, which is not reported finished. A report
    answered with a To short of the task's end says the master cut the
    task there (its rest is a piece for an idle trainer): the list is cut
    at To, so the iterator stops there (or at once, if it is past it), and
    the task is reported finished as usual. The records' last flags come,
    in C too, from an iterator over a list of its own: a cut sets the flag
    of the record at the cut, which the loop reads only if it has not yet
    yielded that record."""

    def __init__(self, client: Client) -> None:
        self._client = client
        self._mu = threading.Lock()
        self._task: Optional[Task] = None
        self._records: List[bytes] = []
        self._it: Any = None
        self._lasts: List[bool] = []  # the last flags of records[start:], read by the loop in order
        self._start = 0
        self._n = 0
        self._sent = 0
        self._dropped = False

    def begin(self, task: Task, records: List[Any], ranged: bool = False) -> Iterator[Record]:
        """The records of task from its From on (an earlier dispatch trained
        those before it) up to its To, when set (the rest is a piece's, or
        for a piece, the rest of its task's); records is cut to To. With
        ranged, records are the record indexes of an index-range task, in
        its record order (task_indexes): they go to Record.index, with data
        None."""
        to = task.get("To") or 0
        if 0 < to < len(records):
            del records[to:]
        n = len(records)
        start = min(max(task.get("From") or 0, 0), n)
        it = iter(records)
        it.__setstate__(start)
        left = n - start
        lasts = [False] * left
        if left:
            lasts[-1] = True
        with self._mu:
            self._task, self._records, self._it, self._n, self._sent, self._dropped = task, records, it, n, start, False
            self._lasts, self._start = lasts, start
        root = (task.get("Of") or 0) if task.get("Piece") else task["Index"]  # Of 0 is omitted on the wire
        fields = (itertools.repeat(root, left), itertools.repeat(task["Pass"], left), iter(lasts), itertools.count(start))
        if ranged:
            # zip pulls from its iterators in turn, all in C, with no other
            # thread running in between: reading the list iterator last
            # changes nothing to what a cut or a drop does.
            return map(_make_record, zip(itertools.repeat(None, left), *fields, it))
        return map(_make_record, zip(it, *fields, itertools.repeat(None, left)))

    def end(self) -> bool:
        """Ends the task; says whether it was dropped."""
        with self._mu:
            self._task, self._records, self._lasts = None, [], []
            return self._dropped

    def check(self, task: Task) -> Optional[Task]:
        """Asks the master, before the loop begins task (which waited in the
        prefetch queue long enough to have been handed to another trainer),
        whether it is still this trainer's and where it ends, with a
        progress report that moves nothing (go/client progress.check).
        Returns None to skip it (it went to another trainer, or is done),
        else the task to train: task, or a copy with the To the master
        answered. A check that fails, or gets no answer within _CHECK_WAIT
        seconds, is no answer: the task is trained."""
        try:
            reply = self._client.task_progress(task, task.get("From") or 0, within=_CHECK_WAIT)
        except (MasterError, ConnectionLost) as e:
            log.debug("trainmaster: could not check task %d, which waited; training it: %s", task["Index"], e)
            return task
        code, to = reply["Report"], reply["To"]
        if code in (_ALREADY_DONE, _STALE_PASS, _SUPERSEDED):
            log.info("trainmaster: task %d waited and went to another trainer; dropping it", task["Index"])
            return None
        if code in (_RECORDED, _TOO_SOON) and to > 0:
            return {**task, "To": to}
        return task

    def run(self, stop: threading.Event) -> None:
        while not stop.wait(self._client.progress_interval):
            self.report()

    def report(self) -> None:
        """Sends the position if it moved since the last report."""
        with self._mu:
            task = self._task
            if task is None:
                return
            done = self._n - self._it.__length_hint__()
            if done <= self._sent:
                return
            self._sent = done
        try:
            reply = self._client.task_progress(task, done)
        except (MasterError, ConnectionLost) as e:
            log.debug("trainmaster: progress of task %d not recorded: %s", task["Index"], e)
            return
        code, to = reply["Report"], reply["To"]
        if code in (_ALREADY_DONE, _STALE_PASS, _SUPERSEDED):
            with self._mu:
                if self._task is task:
                    self._dropped = True
                    self._it.__setstate__(self._n)
            log.info("trainmaster: task %d is no longer this trainer's (report %d); dropping the rest of it", task["Index"], code)
        elif code in (_RECORDED, _TOO_SOON) and to > 0:
            with self._mu:
                cut = self._task is task and to < self._n
                if cut:
                    # A list iterator stops once its index reaches the
                    # list's length: the loop stops at to, or at once if it
                    # is past it; the length hint, and so the position,
                    # follow the shorter list.
                    del self._records[to:]
                    self._n = to
                    # The record at the cut is its task's last now. The
                    # loop reads each flag once, as it yields the record:
                    # if it already yielded that one, this changes nothing.
                    if to > self._start:
                        self._lasts[to - 1 - self._start] = True
            if cut:
                log.info("trainmaster: the master cut task %d short at %d for an idle trainer; stopping there",
                         task["Index"], to)


class _BadRange(ValueError):
    """A range task whose range is no range: it is reported failed."""


def is_range(task: Task) -> bool:
    """Whether task is of an index-range dataset: it covers the record
    indexes [Start, End) and has no blocks (the master omits Start 0)."""
    return not task.get("Blocks") and (task.get("End") or 0) > 0


def task_indexes(task: Task) -> List[int]:
    """The record indexes of an index-range task in its record order, the
    one positions count in: Start + i for position i, or, for a task with a
    Seed, Start + shuffle(End - Start, Seed)[i], the order the records of a
    RecordIO task are trained in."""
    start, end = task.get("Start") or 0, task.get("End") or 0
    if not 0 <= start <= end:
        raise _BadRange(f"task {task.get('Index')}: bad record range [{start}, {end})")
    seed = task.get("Seed") or 0
    if not seed:
        return list(range(start, end))
    return [start + i for i in shuffle(end - start, seed)]


def read_task(task: Task) -> List[bytes]:
    """Reads the records of a task's blocks, checking each block holds the
    records the master says: a task is yielded only once all of it read
    cleanly. A task trained in file order (no Seed) skips the blocks wholly
    outside its From and To (a task resumed, a piece of one), as go/client
    does: their positions hold b"" placeholders, which the records() loop
    never yields (it starts at From and cuts at To). A task without From
    and To, or a shuffled one (its positions are not the file's), is read
    whole."""
    records: List[bytes] = []
    in_file_order = not task.get("Seed")
    start, to = task.get("From") or 0, task.get("To") or 0
    for block in task.get("Blocks") or []:
        n, pos = block.get("NumRecords") or 0, len(records)
        if in_file_order and n > 0 and (pos + n <= start or 0 < to <= pos):
            records.extend(itertools.repeat(b"", n))
            continue
        chunk = recordio.read_chunk(block["Path"], block["Offset"], block["Idx"])
        if len(chunk) != block["NumRecords"]:
            raise recordio.RecordIOError(
                f"recordio: {block['Path']}: chunk {block['Idx']} at offset {block['Offset']}: "
                f"record count mismatch: the master says {block['NumRecords']}, the chunk holds {len(chunk)}")
        records.extend(chunk)
    return records
