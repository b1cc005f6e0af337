"""The records pipeline of one records() loop: a prefetch thread fetches
tasks and reads them ahead (prefetch at a time), a reporter thread sends
the finishes, and the loop yields each task's records in order, following
its position (position.Position) and checking a task that waited in the
prefetch queue with the master before it yields it."""

from __future__ import annotations

import logging
import queue
import threading
import time
from typing import Any, Callable, Iterator, List, NamedTuple, Optional, Protocol, Union

from . import recordio, tasks
from .errors import AllDone, ConnectionLost, MasterError, NoTask, PassOver
from .position import Position, Record, Reporter
from .wire import Task

__all__ = ["Loop", "Source", "CHECK_AFTER"]

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

    def get_task(self, one_pass: Optional[int] = None) -> Task: ...

    def task_finished(self, task: Task) -> int: ...

    def task_failed(self, task: Task, reason: str) -> int: ...


class _Loaded(NamedTuple):
    """A task read ahead: its records in its record order (record indexes
    for a range task), and when the master handed it out."""

    task: Task
    records: List[Any]
    fetched: float
    ranged: bool


class _End(NamedTuple):
    """The last entry of the prefetch queue: all passes are done (error
    None), or what stopped the prefetch thread, for the loop to raise."""

    error: Optional[BaseException]


class Loop:
    """One records() loop over the tasks client hands out; backoff(attempt)
    sleeps between two asks that found no task. See Client.records for
    what it promises."""

    def __init__(self, client: Source, backoff: Callable[[int], None], *, finish_when_read: bool = False,
                 per_pass: bool = False, of_pass: Optional[int] = None) -> None:
        self._client = client
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

    def run(self) -> Iterator[Record]:
        """Yields the records, starting the threads at the first; stops them
        when it ends, whether by the end of the passes, an error or the
        caller leaving it."""
        fetcher = threading.Thread(target=self._fetch, name="trainmaster-prefetch", daemon=True)
        reporter = threading.Thread(target=self._report_finishes, name="trainmaster-finishes", daemon=True)
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

    def _yield_task(self, item: _Loaded) -> Iterator[Record]:
        """Yields the records of a task read ahead, checked first if it
        waited; queues its finish once all of it was yielded, unless it was
        dropped or already reported finished."""
        task = item.task
        if self._reporting and time.monotonic() - item.fetched >= CHECK_AFTER:
            checked = self._position.check(task)
            if checked is None:
                return  # another trainer's now: neither trained nor reported finished
            task = checked
        yield from self._position.begin(task, item.records, item.ranged)
        if not self._position.end() and not self._finish_when_read:
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
        while not self._stop.is_set():
            try:
                task = self._client.get_task(self._pass) if self._pass is not None else self._client.get_task()
            except NoTask:
                self._backoff(attempt)
                attempt += 1
                continue
            except (AllDone, PassOver):
                return None
            if self._per_pass:
                self._pass = task["Pass"]
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
