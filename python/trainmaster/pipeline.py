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
(batches.Batches).

A loop notes what its consumer trained in the client's trained (held.py),
for checkpoints: a records() loop the task it yields, through the record
the consumer holds, and each task it queues the finish of; a loop with
marks leaves that to its consumer too, and its progress reports say only
what the consumer noted trained (Position's trained_only)."""

from __future__ import annotations

import logging
import queue
import threading
import time
from typing import Any, Callable, Iterator, List, NamedTuple, Optional, Protocol, Tuple, Union

from . import recordio, tasks
from .errors import AllDone, ConnectionLost, MasterError, NoTask, PassOver, RankDone
from .held import Trained
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
    trained: Trained

    def dataset_status(self, name: Optional[str] = None) -> Any: ...

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
        self._position = Position(client, trained_only=marks)
        self._reporting = client.progress_interval > 0 and not finish_when_read
        # The dispatches fetched whose finish is not queued yet (nor
        # failed, nor dropped): what this loop holds at the master.
        self._held_mu = threading.Lock()
        self._outstanding = 0
        # A records() loop notes what its consumer trained (see the module).
        self._notes = not marks and not finish_when_read

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
        source = self._client.trained.attach(self._holds) if self._notes else None
        try:
            while isinstance(item := self._ahead.get(), _Loaded):
                yield from self._yield_task(item)
            if item.error is not None:
                raise item.error
        finally:
            if source is not None:
                self._client.trained.detach(source)
            self._close(fetcher, reporter, progress)

    @property
    def trained(self) -> Trained:
        """The client's record of what its loops trained (held.py)."""
        return self._client.trained

    def _holds(self) -> List[Tuple[Task, int]]:
        """A records() loop's source for checkpoints: the task it yields,
        through the record its consumer holds."""
        current = self._position.current()
        return [current] if current is not None else []

    def rest_is_ours(self) -> bool:
        """Whether every task of the pass left at the master is this loop's:
        none to hand out (Todo 0), and no more pending than this loop holds
        (the finishes it queued may not be recorded yet: then it cannot
        tell, and says no). A loop outside any group may then end its pass
        before the master does: its last finishes end it."""
        with self._held_mu:
            mine = self._outstanding
        if mine <= 0 or self._pass is None:
            return False
        try:
            st = self._client.dataset_status()
        except (MasterError, ConnectionLost) as e:
            log.debug("trainmaster: no status of the pass: %s", e)
            return False
        if not isinstance(st, dict) or st.get("Pass") != self._pass or st.get("AllDone") or "Todo" not in st:
            return False
        return st["Todo"] == 0 and 0 < st.get("Pending", 0) <= mine

    def _settled(self) -> None:
        """A dispatch of this loop's left it: its finish queued, reported
        failed, or dropped."""
        with self._held_mu:
            self._outstanding -= 1

    def set_on_wait(self, on_wait: Optional[Callable[[], bool]]) -> None:
        """Has the prefetch thread call on_wait each time the master has no
        task to give, before it waits to ask again; set before run. on_wait
        returning True ends the loop there, as the end of its pass."""
        self._on_wait = on_wait

    def finish(self, task: Task) -> None:
        """Queues the finish of a task a loop with marks yielded the End of,
        for the reporter thread; also once the loop ended, until
        end_finishes."""
        self._settled()
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
                if not self._finish_when_read:
                    self._settled()
                return  # another trainer's now: neither trained nor reported finished
            task = checked
        if self._marks:
            yield Begin(task)
        yield from self._position.begin(task, item.records, item.ranged)
        through = self._position.current()
        if self._position.end():
            self._client.trained.forget(task)
            if not self._finish_when_read:
                self._settled()
            return
        if self._finish_when_read:
            return
        if self._marks:
            yield End(task)
        else:
            if self._notes and through is not None:
                self._client.trained.trained(*through)
            self._settled()
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
                if not self._finish_when_read:
                    with self._held_mu:
                        self._outstanding += 1
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
                if self._on_wait is not None and self._on_wait():
                    return None  # the rest of the pass is this loop's: it ends its pass itself
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
            if not self._finish_when_read:
                self._settled()
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
