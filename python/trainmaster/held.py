"""What a client's loops trained that the master may not know yet: the
Held of its checkpoint reports (go/wire/checkpoint.go; go/client's
checkpoint.go keeps the same). A record counts as trained once the loop
has it and asks for the next one, or takes a checkpoint; records read
ahead (prefetch, batches formed ahead for a DataLoader's workers) do not.

The loops note each task as they train it (trained: the position before
which its records are trained); a task is forgotten once the master
answered its finish (acked), recorded a progress report through its
position (reported), or took it back (forget). A loop running adds what
only it knows (the task it yields, the batch its consumer holds) through a
source it attaches, asked at each checkpoint."""

from __future__ import annotations

import collections
import itertools
import threading
import weakref
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

from .wire import DEFAULT_DATASET, Held, Task

__all__ = ["Trained", "Source"]

# What a loop's source returns: the tasks it holds trained, with their
# positions, that it has not noted (trained) yet.
Source = Callable[[], Iterable[Tuple[Task, int]]]

# How many finishes acknowledged are remembered, so that a batch of a task
# reported finished early (a trainer outside a group ending a pass) does not
# bring it back once it is trained.
_ACKED_KEPT = 4096

_Key = Tuple[str, int, int, int, int]


def key(task: Task, dataset: str = DEFAULT_DATASET) -> _Key:
    """A dispatch's identity: its dataset, Index, Epoch, Pass and Gen."""
    return (task.get("Dataset") or dataset, task["Index"], task["Epoch"], task["Pass"], task.get("Gen") or 0)


class Trained:
    """The tasks trained that the master may not know of, with the position
    trained through. dataset is the client's, for tasks that name none.
    Safe to use from several threads."""

    def __init__(self, dataset: str = DEFAULT_DATASET) -> None:
        self.dataset = dataset
        self._mu = threading.Lock()
        self._tasks: Dict[_Key, Tuple[Task, int]] = {}
        self._acked: "collections.OrderedDict[_Key, None]" = collections.OrderedDict()
        self._sources: Dict[int, Callable[[], Optional[Source]]] = {}
        self._ids = itertools.count()

    def trained(self, task: Task, done: int) -> None:
        """Notes that the records of task's order before position done are
        trained (a position never goes back)."""
        k = key(task, self.dataset)
        with self._mu:
            if k in self._acked:
                return
            was = self._tasks.get(k)
            if was is None or done > was[1]:
                self._tasks[k] = (task, done)

    def through(self, task: Task) -> Optional[int]:
        """The position task is noted trained through; None if it is not."""
        with self._mu:
            was = self._tasks.get(key(task, self.dataset))
        return None if was is None else was[1]

    def acked(self, task: Task) -> None:
        """The master answered task's finish: it knows."""
        k = key(task, self.dataset)
        with self._mu:
            self._tasks.pop(k, None)
            self._acked[k] = None
            while len(self._acked) > _ACKED_KEPT:
                self._acked.popitem(last=False)

    def reported(self, task: Task, done: int) -> None:
        """The master recorded task trained through done (its progress)."""
        k = key(task, self.dataset)
        with self._mu:
            was = self._tasks.get(k)
            if was is not None and was[1] <= done:
                del self._tasks[k]

    def forget(self, task: Task) -> None:
        """task is no longer this trainer's (the master said so)."""
        with self._mu:
            self._tasks.pop(key(task, self.dataset), None)

    def clear(self) -> None:
        """Forgets everything (a rewind made every dispatch stale)."""
        with self._mu:
            self._tasks.clear()

    def attach(self, source: Source) -> int:
        """Adds a running loop's source (held weakly when a bound method:
        a loop dropped without being closed is not kept alive); returns the
        id that detaches it."""
        ref: Callable[[], Optional[Source]]
        if hasattr(source, "__self__"):
            ref = weakref.WeakMethod(source)  # type: ignore[arg-type]
        else:
            ref = lambda: source  # noqa: E731
        with self._mu:
            n = next(self._ids)
            self._sources[n] = ref
        return n

    def detach(self, n: int) -> None:
        with self._mu:
            self._sources.pop(n, None)

    def held(self) -> List[Held]:
        """Every task trained that the master may not know of, as a
        checkpoint report's Held: the running loops' sources are asked
        first (a source may note what its consumer trained)."""
        with self._mu:
            sources = list(self._sources.values())
        extra: List[Tuple[Task, int]] = []
        for ref in sources:
            source = ref()
            if source is not None:
                extra.extend(source())
        for task, done in extra:
            self.trained(task, done)
        with self._mu:
            return [_held(k, done) for k, (_, done) in self._tasks.items()]


def _held(k: _Key, done: int) -> Held:
    """The wire's Held of a dispatch (its zero fields omitted, the default
    dataset too, as the master omits them)."""
    dataset, index, epoch, pass_, gen = k
    h: Dict[str, Any] = {"Index": index, "Epoch": epoch, "Pass": pass_, "Done": done}
    if dataset != DEFAULT_DATASET:
        h["Dataset"] = dataset
    if gen:
        h["Gen"] = gen
    return h  # type: ignore[return-value]
