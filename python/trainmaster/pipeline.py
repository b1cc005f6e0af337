"""The records pipeline of one records() loop: a prefetch thread fetches
tasks and reads them ahead (prefetch at a time), a reporter thread sends
the finishes, and the loop yields each task's records in order, following
its position (position.Position) and checking a task that waited in the
prefetch queue with the master before it yields it. A loop of a rank of a
group (group set) asks for its tasks as that rank and ends once its share
of the pass was handed to it; a loop with marks yields each task's Begin
and End around its records and leaves its finishes to the consumer
(Loop.finish), for a consumer that forms batches and reports a task
finished only once the batch holding its last record was trained
(batches.Batches)."""

from __future__ import annotations

import logging
import queue
import threading
import time
from typing import Any, Callable, Iterator, List, NamedTuple, Optional, Protocol, Tuple, Union

from . import recordio, tasks
from .errors import AllDone, ConnectionLost, MasterError, NoTask, PassOver, RankDone
from .position import Position, Record, Reporter
from .wire import Task

__all__ = ["Loop", "Source", "Begin", "End", "CHECK_AFTER"]

log = logging.getLogger("trainmaster")

# How long a task waits in the prefetch queue, in seconds, before the loop
# checks with the master that it is still this trainer's: the master may
# have handed a task that waited behind a straggling one to an idle trainer
# (its -stragglers). The check is a progress report that moves nothing: no
# write on the master, one round trip per such task.
CHECK_AFTER = 1.0


class Source(Reporter, Protocol):
    """What the loop needs of the client: its calls about tasks."""

    prefetch: int
    call_timeout: float

    def get_task(self, one_pass: Optional[int] = None, group: Optional[Tuple[int, int, int]] = None) -> Task: ...

    def task_finished(self, task: Task) -> int: ...

    def task_failed(self, task: Task, reason: str) -> int: ...


class _Loaded(NamedTuple):
    """A task read ahead: its records in its record order (record indexes
    for a range task), and when the master handed it out."""

    task: Task
    records: List[Any]
    fetched: float
    ranged: bool


class Begin(NamedTuple):
    """What a loop with marks yields before the records of a task: the
    task, as it is trained (checked, cut)."""

    task: Task


class End(NamedTuple):
    """What a loop with marks yields after the last record of a task that
    is to be reported finished (one dropped is not): its finish is the
    consumer's to report (Loop.finish)."""

    task: Task


class _End(NamedTuple):
    """The last entry of the prefetch queue: all passes are done (error
    None), or what stopped the prefetch thread, for the loop to raise."""

    error: Optional[BaseException]


class Loop:
    """One records() loop over the tasks client hands out; backoff(attempt)
    sleeps between two asks that found no task. See Client.records for
    what it promises. group, (rank, ranks, batch), makes it a rank's loop
    (Client.batches): it asks for tasks as that rank, and ends once its
    share of the pass was handed (a task with no RankLeft, or the master
    answering "rank done"). marks: see Begin, End and finish; and
    set_on_wait."""

    def __init__(self, client: Source, backoff: Callable[[int], None], *, finish_when_read: bool = False,
                 per_pass: bool = False, of_pass: Optional[int] = None,
                 group: Optional[Tuple[int, int, int]] = None, marks: bool = False) -> None:
        self._on_wait: Optional[Callable[[], None]] = None
        self._client = client
        self._group = group
        self._marks = marks
        self._share_handed = False  # the prefetch thread's own: the rank's whole share was handed
        self._reporter: Optional[threading.Thread] = None
        self._per_pass = per_pass or of_pass is not None
        # The pass a per_pass loop trains: of_pass, else its first task's;
        # the prefetch thread's own.
        self._pass: Optional[int] = of_pass
        self._backoff = backoff
        self._finish_when_read = finish_when_read
        self._ahead: "queue.Queue[Union[_Loaded, _End]]" = queue.Queue(maxsize=max(client.prefetch, 1))
        self._finished: "queue.Queue[Optional[Task]]" = queue.Queue()  # None: no more
        self._stop = threading.Event()
        self._position = Position(client)
        self._reporting = client.progress_interval > 0 and not finish_when_read

    def run(self) -> Iterator[Union[Record, Begin, End]]:
        """Yields the records, starting the threads at the first; stops them
        when it ends, whether by the end of the passes, an error or the
        caller leaving it."""
        fetcher = threading.Thread(target=self._fetch, name="trainmaster-prefetch", daemon=True)
        reporter = threading.Thread(target=self._report_finishes, name="trainmaster-finishes", daemon=True)
        self._reporter = reporter
        progress = threading.Thread(target=self._position.run, args=(self._stop,), name="trainmaster-progress",
                                    daemon=True)
        fetcher.start()
        reporter.start()
        if self._reporting:
            progress.start()
        try:
            while isinstance(item := self._ahead.get(), _Loaded):
                yield from self._yield_task(item)
            if item.error is not None:
                raise item.error
        finally:
            self._close(fetcher, reporter, progress)

    def set_on_wait(self, on_wait: Optional[Callable[[], None]]) -> None:
        """Has the prefetch thread call on_wait each time the master has no
        task to give, before it waits to ask again; set before run."""
        self._on_wait = on_wait

    def finish(self, task: Task) -> None:
        """Queues the finish of a task a loop with marks yielded the End of,
        for the reporter thread; also once the loop ended, until
        end_finishes."""
        self._finished.put(task)

    def end_finishes(self) -> None:
        """Sends the finishes queued and stops the reporter thread of a loop
        with marks (the loop's end leaves it running, for finish)."""
        if self._reporter is not None and self._reporter.is_alive():
            self._finished.put(None)
            self._reporter.join(self._client.call_timeout)

    def _yield_task(self, item: _Loaded) -> Iterator[Union[Record, Begin, End]]:
        """Yields the records of a task read ahead, checked first if it
        waited; queues its finish once all of it was yielded, unless it was
        dropped or already reported finished. With marks, the task's Begin
        comes first and its End last instead of the finish."""
        task = item.task
        if self._reporting and time.monotonic() - item.fetched >= CHECK_AFTER:
            checked = self._position.check(task)
            if checked is None:
                return  # another trainer's now: neither trained nor reported finished
            task = checked
        if self._marks:
            yield Begin(task)
        yield from self._position.begin(task, item.records, item.ranged)
        if self._position.end() or self._finish_when_read:
            return
        if self._marks:
            yield End(task)
        else:
            self._finished.put(task)

    def _close(self, fetcher: threading.Thread, reporter: threading.Thread, progress: threading.Thread) -> None:
        """Stops the threads: reports the position of a task left in the
        middle, if any, and sends the finishes already queued."""
        self._stop.set()
        self._position.wake()
        if progress.is_alive():
            progress.join(self._client.call_timeout)
        if self._reporting:
            self._position.report()
        while fetcher.is_alive():  # it may wait to queue a task: make room
            try:
                self._ahead.get(timeout=0.05)
            except queue.Empty:
                pass
        if not self._marks:
            self._finished.put(None)
            reporter.join(self._client.call_timeout)

    def _report_finishes(self) -> None:
        """The reporter thread: sends the finishes queued, in order."""
        while (task := self._finished.get()) is not None:
            try:
                self._client.task_finished(task)
            except (MasterError, ConnectionLost) as e:
                log.warning("trainmaster: the finish of task %d was not recorded: %s", task["Index"], e)

    def _fetch(self) -> None:
        """The prefetch thread: fetches and reads tasks until all passes
        are done or the loop stops; hands what stopped it to the loop."""
        try:
            while not self._stop.is_set():
                task = self._next_task()
                if task is None:
                    break
                loaded = self._load(task)
                if loaded is not None:
                    self._queue(loaded)
            self._ahead.put(_End(None))
        except BaseException as e:  # handed to the consumer
            if not self._stop.is_set():
                self._ahead.put(_End(e))

    def _next_task(self) -> Optional[Task]:
        """The next task, asked for with backoff while the master has none
        to give; None once all passes are done (a per_pass loop's pass is
        over) or the loop stops."""
        attempt = 0
        while not self._stop.is_set() and not self._share_handed:
            try:
                if self._group is not None:
                    task = self._client.get_task(self._pass, group=self._group)
                elif self._pass is not None:
                    task = self._client.get_task(self._pass)
                else:
                    task = self._client.get_task()
            except NoTask:
                if self._on_wait is not None:
                    self._on_wait()
                self._backoff(attempt)
                attempt += 1
                continue
            except (AllDone, PassOver, RankDone):
                return None
            if self._per_pass:
                self._pass = task["Pass"]
            if self._group is not None and "RankRecords" in task and not task.get("RankLeft"):
                self._share_handed = True  # this task ends the rank's share: nothing more to ask for
            return task
        return None

    def _load(self, task: Task) -> Optional[_Loaded]:
        """Reads task; None if it cannot be read (it is reported failed).
        With finish_when_read it is reported finished once read."""
        fetched = time.monotonic()
        try:
            records, ranged = tasks.training_order(task)
        except (recordio.RecordIOError, OSError, tasks.BadRange) as e:
            log.warning("trainmaster: task %d cannot be read, reporting it failed: %s", task["Index"], e)
            self._client.task_failed(task, str(e))
            return None
        if self._finish_when_read:
            self._client.task_finished(task)
        return _Loaded(task, records, fetched, ranged)

    def _queue(self, loaded: _Loaded) -> None:
        """Queues a task read for the loop, waiting for room unless the
        loop stops."""
        while not self._stop.is_set():
            try:
                self._ahead.put(loaded, timeout=0.1)
                return
            except queue.Full:
                continue
