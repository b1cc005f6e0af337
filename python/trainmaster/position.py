"""How far a records() loop got in the task it yields: the task's records
from its From up to its To, as Records, and the progress reports
(wire.Progress) that tell the master the position, and tell the loop when
the task is no longer this trainer's or was cut short. Which positions a
task yields is the contract's (go/wire/testdata/contract.json)."""

from __future__ import annotations

import functools
import itertools
import logging
import threading
from typing import Any, Iterator, List, NamedTuple, Optional, Protocol, Tuple

from .errors import ConnectionLost, MasterError
from .held import Trained
from .wire import HEARD, MIN_PROGRESS_INTERVAL, NOT_OURS, ProgressReply, Task, progress_every, root

__all__ = ["Record", "Position", "Reporter", "CHECK_WAIT"]

log = logging.getLogger("trainmaster")

# How long the check of a task that waited waits for the master's answer,
# in seconds: a master that cannot answer in time (a failover, an outage)
# does not stop the training of a task read ahead.
CHECK_WAIT = 2.0


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


# Builds a Record from a tuple in C, without namedtuple's Python __new__:
# the per-record cost of the loop is what separates the client from a bare
# loop over the files.
_make_record = functools.partial(tuple.__new__, Record)


class Reporter(Protocol):
    """What a Position needs of the client: its progress reports."""

    progress_interval: float
    follows_master: bool  # report as often as each task asks, not every progress_interval
    trained: Trained  # what the consumer trained (trained_only)

    def task_progress(self, task: Task, done: int, *, within: Optional[float] = None) -> ProgressReply: ...


class Position:
    """How far a records() loop got in the task it yields, reported by a
    thread of its own every progress_interval (run), or, when the client
    follows the master, as often as the task asks, from its start. The
    records are yielded in C from a list iterator: the position is read off that
    iterator (its length hint is what is left), so following it costs the
    loop nothing per record. A record counts as trained once yielded. A
    report answered superseded, already done or stale pass says the task is
    no longer this trainer's: the iterator is run to its end, so the loop
    stops yielding the task, which is not reported finished. A report
    answered with a To short of the task's end says the master cut the task
    there (its rest is a piece for an idle trainer): the list is cut at To,
    so the iterator stops there (or at once, if it is past it), and the
    task is reported finished as usual. The records' last flags come, in C
    too, from an iterator over a list of its own: a cut sets the flag of
    the record at the cut, which the loop reads only if it has not yet
    yielded that record.

    With trained_only (a loop whose consumer forms batches ahead of
    training them), a report says only what the client's trained holds of
    the task (what the consumer noted trained), never more than was
    yielded: so that the master's position, which a data checkpoint counts
    as trained, holds no record read ahead."""

    def __init__(self, client: Reporter, *, trained_only: bool = False) -> None:
        self._client = client
        self._trained_only = trained_only
        self._mu = threading.Lock()  # guards every field below: the loop's thread and the reporter's share them
        self._task: Optional[Task] = None
        self._records: List[Any] = []
        self._it: Any = None
        self._lasts: List[bool] = []  # the last flags of records[start:], read by the loop in order
        self._start = 0
        self._n = 0
        self._sent = 0
        self._dropped = False
        self._every = client.progress_interval  # the interval run waits
        self._began = 0  # tasks begun that set _every: run restarts its wait at each
        self._wake = threading.Condition(self._mu)  # run's wait, ended by a task begun or by wake

    def begin(self, task: Task, records: List[Any], ranged: bool = False) -> Iterator[Record]:
        """The records of task from its From on (an earlier dispatch trained
        those before it) up to its To, when set (the rest is a piece's, or
        for a piece, the rest of its task's); records is cut to To. With
        ranged, records are the record indexes of an index-range task, in
        its record order (tasks.task_indexes): they go to Record.index,
        with data None."""
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
            if self._client.follows_master:
                self._every, self._began = progress_every(task), self._began + 1
                self._wake.notify_all()
        fields = (itertools.repeat(root(task), left), itertools.repeat(task["Pass"], left), iter(lasts),
                  itertools.count(start))
        if ranged:
            # zip pulls from its iterators in turn, all in C, with no other
            # thread running in between: reading the list iterator last
            # changes nothing to what a cut or a drop does.
            return map(_make_record, zip(itertools.repeat(None, left), *fields, it))
        return map(_make_record, zip(it, *fields, itertools.repeat(None, left)))

    def current(self) -> Optional[Tuple[Task, int]]:
        """The task yielded, with the position before which its records
        were yielded (the consumer has the last); None between tasks."""
        with self._mu:
            if self._task is None:
                return None
            return self._task, self._n - self._it.__length_hint__()

    def end(self) -> bool:
        """Ends the task; says whether it was dropped."""
        with self._mu:
            self._task, self._records, self._lasts = None, [], []
            return self._dropped

    def check(self, task: Task) -> Optional[Task]:
        """Asks the master, before the loop begins task (which waited in the
        prefetch queue long enough to have been handed to another trainer),
        whether it is still this trainer's and where it ends, with a
        progress report that moves nothing. Returns None to skip it (it
        went to another trainer, or is done), else the task to train: task,
        or a copy with the To the master answered. A check that fails, or
        gets no answer within CHECK_WAIT seconds, is no answer: the task is
        trained."""
        try:
            reply = self._client.task_progress(task, task.get("From") or 0, within=CHECK_WAIT)
        except (MasterError, ConnectionLost) as e:
            log.debug("trainmaster: could not check task %d, which waited; training it: %s", task["Index"], e)
            return task
        code, to = reply["Report"], reply["To"]
        if code in NOT_OURS:
            log.info("trainmaster: task %d waited and went to another trainer; dropping it", task["Index"])
            return None
        if code in HEARD and to > 0:
            return {**task, "To": to}
        return task

    def run(self, stop: threading.Event) -> None:
        """Reports the position until stop is set (and wake called): every
        progress_interval, or, when the client follows the master, from the
        start of each task after MIN_PROGRESS_INTERVAL, then after twice
        the last wait each time, up to the interval the task asks for (a
        task that asks nothing: 1 s, 2 s, 4 s, 8 s, then every 10 s), so
        that the master hears early of a task that may straggle."""
        follows = self._client.follows_master
        wait = 0.0
        while True:
            with self._wake:
                if stop.is_set():
                    return
                began = self._began
                wait = min(max(2 * wait, MIN_PROGRESS_INTERVAL), self._every) if follows else self._every
                self._wake.wait(wait)
                if stop.is_set():
                    return
                if self._began != began:
                    wait = 0.0
                    continue  # a task began: its waits start now
            self.report()

    def wake(self) -> None:
        """Ends run's wait, for it to see its stop set."""
        with self._wake:
            self._wake.notify_all()

    def report(self) -> None:
        """Sends the position if it moved since the last report, and acts
        on the answer: drops the rest of a task no longer this trainer's,
        cuts a task cut short."""
        with self._mu:
            task = self._task
            if task is None:
                return
            done = self._n - self._it.__length_hint__()
            if self._trained_only:
                trained = self._client.trained.through(task)
                done = min(done, self._start if trained is None else trained)
            if done <= self._sent:
                return
            self._sent = done
        try:
            reply = self._client.task_progress(task, done)
        except (MasterError, ConnectionLost) as e:
            log.debug("trainmaster: progress of task %d not recorded: %s", task["Index"], e)
            return
        code, to = reply["Report"], reply["To"]
        if code in NOT_OURS:
            self._drop(task)
            log.info("trainmaster: task %d is no longer this trainer's (report %d); dropping the rest of it",
                     task["Index"], code)
        elif code in HEARD and to > 0 and self._cut(task, to):
            log.info("trainmaster: the master cut task %d short at %d for an idle trainer; stopping there",
                     task["Index"], to)

    def _drop(self, task: Task) -> None:
        """Runs the iterator of task, if the loop still yields it, to its end."""
        with self._mu:
            if self._task is task:
                self._dropped = True
                self._it.__setstate__(self._n)

    def _cut(self, task: Task, to: int) -> bool:
        """Cuts task, if the loop still yields it, at position to; says
        whether it did (to is short of its end)."""
        with self._mu:
            if self._task is not task or to >= self._n:
                return False
            # A list iterator stops once its index reaches the list's
            # length: the loop stops at to, or at once if it is past it; the
            # length hint, and so the position, follow the shorter list.
            del self._records[to:]
            self._n = to
            # The record at the cut is its task's last now. The loop reads
            # each flag once, as it yields the record: if it already yielded
            # that one, this changes nothing.
            if to > self._start:
                self._lasts[to - 1 - self._start] = True
            return True
