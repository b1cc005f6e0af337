"""Batches of one pass (Client.batches): the records of the tasks a
records() loop yields (pipeline.Loop, with marks), formed into batches
across task boundaries. A rank of a group of ranks (synchronous
data-parallel training, go/wire/group.go) forms exactly the batches of its
plan, the same number as every other rank; a trainer outside any group
forms batches of batch_size, the last smaller. A task is reported finished
once every record of it was in a batch the consumer has trained: it asked
for the next batch (or, with hold, said so with consumed); or once all of
it went into batches, yielded or being formed, when the master has no task
to give: the pass may be over but for this trainer's last tasks, and the
master ends it only once they are finished (outside a group, the end of a
pass is known no other way), unless every task the master has left in the
pass is this trainer's: then it ends the pass itself, and its finishes,
sent as the batches are trained, end the pass at the master.

For data checkpoints, the records of the batches trained are noted in the
client's trained (held.py) as they are trained: each task through the
position past its last record in them; a task is trained once all of it
was, and held until the master answers its finish."""

from __future__ import annotations

import collections
import logging
import threading
import weakref
from typing import Any, Callable, Deque, Dict, Iterator, List, Optional, Tuple

from .errors import MasterError
from .held import key
from .pipeline import Begin, End, Loop
from .wire import Task, batch_sizes

__all__ = ["Batches"]

log = logging.getLogger("trainmaster")

_STOP = object()  # the loop ended


def _no() -> bool:
    return False


class Batches:
    """The batches of one pass, an iterator of lists of records: bytes, or
    for an index-range dataset the records' indexes (ints). Made by
    Client.batches, which says what it promises.

    plan is, for a rank, its plan of the pass once the first task came (a
    dict: pass, rank, ranks, share, batches, batch_size, batch_sizes);
    None before, and for a trainer outside any group. pass_ is the pass
    trained (None until known, outside a group); on_begin(pass) is called
    at a rank's first task. With hold, tasks are reported finished only as
    consumed(n) says batches were trained, not when the next batch is
    asked for: for a consumer that forms batches ahead of training them (a
    DataLoader's prefetching). close() ends the loop, sending the finishes
    due; dropping the iterator (a `for` left early) closes it too. Not safe
    to iterate from two threads. A checkpoint (Client.checkpoint) taken
    while it runs holds trained the batches yielded, or with hold those
    consumed(n) said were trained."""

    def __init__(self, loop: Loop, batch_size: int, *, group: Optional[Tuple[int, int]] = None,
                 of_pass: Optional[int] = None, hold: bool = False,
                 on_begin: Optional[Callable[[int], None]] = None) -> None:
        self._on_begin = on_begin
        self.batch_size = batch_size
        self.rank, self.ranks = group if group is not None else (None, None)
        self.pass_ = of_pass
        self.plan: Optional[Dict[str, Any]] = None
        self._loop = loop
        # Weakly: the loop's threads must not keep an iterator left early
        # alive, so that dropping it closes it.
        waiting = weakref.WeakMethod(self._waiting)
        loop.set_on_wait(lambda: (waiting() or _no)())
        self._items: Iterator[Any] = loop.run()
        self._trained = loop.trained
        self._source = self._trained.attach(self._holds)
        # What each batch yielded and not yet trained holds of each task:
        # (batch number, [(task, position past its last record in it)]).
        self._marks: Deque[Tuple[int, List[Tuple[Task, int]]]] = collections.deque()
        self._forming: Dict[Any, Tuple[Task, int]] = {}  # the same, of the batch being formed
        self._task: Optional[Task] = None  # the task whose records come (its Begin came)
        self._early: set = set()  # the tasks reported finished before they were trained (outside a group)
        self._hold = hold
        self._sizes: Optional[List[int]] = None  # the plan's batch sizes
        self._yielded = 0  # batches yielded
        self._records = 0  # records in them
        self._consumed = 0  # batches trained (consumed)
        # The tasks whose End came, with how many batches must be trained
        # before they are reported finished, in order.
        self._ends: Deque[Tuple[int, Task]] = collections.deque()
        self._mu = threading.Lock()  # guards _ends and _consumed (consumed may come from another thread)
        self._peeked: Any = None  # an item taken from the loop ahead, to process next
        self._exhausted = False  # the loop ended
        self._overflow = False  # the master handed records beyond the plan
        self._short = False  # the loop ended short of the plan (said once)
        self._done = False
        self._closed = False

    def __iter__(self) -> "Batches":
        return self

    def __next__(self) -> List[Any]:
        if not self._hold:
            self.consumed(self._yielded)  # asking for the next batch: every one yielded was trained
        if self._done:
            raise StopIteration
        try:
            batch = self._form()
        except BaseException:
            self._done = True
            if not self._hold:
                self.close()
            raise
        if batch is None:
            self._done = True
            if not self._hold:
                self.close()
            raise StopIteration
        with self._mu:
            self._marks.append((self._yielded, list(self._forming.values())))
            self._forming.clear()
            self._yielded += 1
        self._records += len(batch)
        return batch

    def consumed(self, n: int) -> None:
        """Says the first n batches yielded were trained: the tasks all of
        whose records were in them are reported finished (in order, by the
        loop's reporter thread)."""
        with self._mu:
            self._consumed = max(self._consumed, min(n, self._yielded))
            while self._marks and self._marks[0][0] < self._consumed:
                for task, done in self._marks.popleft()[1]:
                    if key(task) not in self._early:
                        self._trained.trained(task, done)
            while self._ends and self._ends[0][0] <= self._consumed:
                self._loop.finish(self._ends.popleft()[1])

    def _holds(self) -> List[Tuple[Task, int]]:
        """The source of checkpoints (held.py): without hold, the batch the
        consumer holds is trained once it takes a checkpoint."""
        if not self._hold and not self._closed:
            self.consumed(self._yielded)
        return []

    def _waiting(self) -> bool:
        """The prefetch thread found no task to take (it calls this before
        it waits to ask again); says whether to end the loop there. Outside
        a group the master ends a pass only once this trainer's last tasks
        are finished, while their records may wait in batches formed and not
        trained: when every task the master has left in the pass is this
        trainer's, it ends the pass itself (its finishes, sent as its
        batches are trained, end it at the master); else it reports
        finished every task all of whose records went into batches, trained
        or not. A rank's pass ends with its plan: it waits."""
        if self.ranks is not None:
            return False
        with self._mu:
            if not self._ends:
                return False
        if self._loop.rest_is_ours():
            log.debug("trainmaster: every task left in pass %s is this trainer's: ending the pass here", self.pass_)
            return True
        with self._mu:
            while self._ends:
                task = self._ends.popleft()[1]
                self._early.add(key(task))
                self._loop.finish(task)
        return False

    def close(self) -> None:
        """Ends the loop: its threads stop, and the finishes due are sent.
        Without hold, every batch yielded counts as trained."""
        if self._closed:
            return
        self._closed = True
        self._done = True
        if not self._hold:
            self.consumed(self._yielded)
        self._trained.detach(self._source)
        self._items.close()  # type: ignore[attr-defined]
        self._loop.end_finishes()

    def __del__(self) -> None:
        # Left without close (a `for` left early): as a generator would be.
        try:
            self.close()
        except Exception:  # noqa: BLE001 (at interpreter exit, or a loop already gone)
            pass

    def __enter__(self) -> "Batches":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # Forming the batches.

    def _next_item(self) -> Any:
        """The next item of the loop: a Record, a Begin or an End; _STOP
        once it ended."""
        if self._peeked is not None:
            item, self._peeked = self._peeked, None
            return item
        if self._exhausted:
            return _STOP
        item = next(self._items, _STOP)
        if item is _STOP:
            self._exhausted = True
        return item

    def _want(self) -> Optional[int]:
        """The size of the next batch: batch_size outside a group; for a
        rank its plan's (0 once the plan is done), None until the plan is
        known."""
        if self.ranks is None:
            return self.batch_size
        if self._sizes is None:
            return None
        return self._sizes[self._yielded] if self._yielded < len(self._sizes) else 0

    def _form(self) -> Optional[List[Any]]:
        """The next batch; None once the pass ended for this trainer."""
        batch: List[Any] = []
        while True:
            want = self._want()
            if want == 0:
                self._drain()
                return None
            if want is not None and len(batch) >= want:
                return batch
            item = self._next_item()
            if item is _STOP:
                return self._end(batch)
            if isinstance(item, Begin):
                self._begin(item.task)
            elif isinstance(item, End):
                self._ended(item.task, batch)
            else:
                batch.append(item.index if item.data is None else item.data)
                if self._task is not None:
                    self._forming[id(self._task)] = (self._task, item.position + 1)
                if item.last:
                    # The End of its task follows at once: take it with this
                    # batch, so that the task is finished once this batch
                    # is trained, not the next.
                    follow = self._next_item()
                    if isinstance(follow, End):
                        self._ended(follow.task, batch)
                    elif follow is not _STOP:
                        self._peeked = follow

    def _ended(self, task: Task, batch: List[Any]) -> None:
        """Notes the End of task: its last record is in the batch being
        formed, if it holds any, else in the last one yielded."""
        if self._overflow:
            return  # some of its records were not trained
        with self._mu:
            self._ends.append((self._yielded + (1 if batch else 0), task))

    def _begin(self, task: Task) -> None:
        """Takes a rank's plan from its first task, checks the later ones
        against it."""
        self._task = task
        if self.pass_ is None:
            self.pass_ = task["Pass"]
        if self.ranks is None:
            return
        share, k = task.get("RankRecords"), task.get("RankBatches")
        if not share or not k:
            raise MasterError(f"rank {self.rank} of {self.ranks}: the master handed task {task['Index']} of pass "
                              f"{task['Pass']} without a plan (RankRecords {share}, RankBatches {k}): it does not "
                              "serve groups of ranks; update it")
        if self.plan is None:
            sizes = batch_sizes(share, k, self.batch_size)
            if sizes is None:
                raise MasterError(f"rank {self.rank} of {self.ranks}, pass {task['Pass']}: the master's plan, a share "
                                  f"of {share} records in {k} batches, fits no batches of {self.batch_size} at most")
            self._sizes = sizes
            self.plan = {"pass": task["Pass"], "rank": self.rank, "ranks": self.ranks, "share": share, "batches": k,
                         "batch_size": self.batch_size, "batch_sizes": sizes}
            if self._on_begin is not None:
                self._on_begin(task["Pass"])
        elif (share, k) != (self.plan["share"], self.plan["batches"]):
            log.error("trainmaster: rank %d of %d, pass %d: task %d carries the plan share %d in %d batches, the "
                      "pass's first task %d in %d; keeping the first", self.rank, self.ranks, task["Pass"],
                      task["Index"], share, k, self.plan["share"], self.plan["batches"])

    def _end(self, batch: List[Any]) -> Optional[List[Any]]:
        """The loop ended while batch was formed: batch, the last, if it
        holds anything; a rank short of its share says so."""
        if self.plan is not None and self._records + len(batch) < self.plan["share"] and not self._short:
            self._short = True
            got = self._records + len(batch)
            log.error("trainmaster: rank %d of %d, pass %d: the master handed %d records of the rank's share of %d "
                      "(%d of its %d batches formed); a task of it failed for good or was taken back? Ending the "
                      "pass short: this rank runs fewer steps than the others (a DDP loop without join() then "
                      "waits for it)", self.rank, self.ranks, self.plan["pass"], got, self.plan["share"],
                      self._yielded + (1 if batch else 0), self.plan["batches"])
        return batch or None

    def _drain(self) -> None:
        """The plan is done: takes the rest of the loop (the Ends of the
        last tasks), which should hold no record."""
        extra = 0
        while (item := self._next_item()) is not _STOP:
            if isinstance(item, End):
                self._ended(item.task, [])
            elif not isinstance(item, Begin):
                extra += 1
                self._overflow = True
        if extra and self.plan is not None:
            log.error("trainmaster: rank %d of %d, pass %d: the master handed %d records beyond the rank's share of "
                      "%d; they were not trained, and their tasks not reported finished", self.rank, self.ranks,
                      self.plan["pass"], extra, self.plan["share"])
