"""A PyTorch IterableDataset over the master's tasks, one pass per
iteration: `for epoch in range(passes): for batch in loader:` trains pass
`epoch` in each epoch.

With a DataLoader and num_workers > 1, each worker process is a trainer of
its own (its own connection, its own tasks): the master hands each task of a
pass to one of them, so no record is yielded twice in a pass, unless a task
was taken back from a worker that stalled or died. A task counts as
consumed once a worker has read it (see Client.records(finish_when_read)):
the records a worker holds when it dies are not handed out again in that
pass, as a DataLoader's batched records would not be either.

    loader = DataLoader(TaskDataset(addr="127.0.0.1:8080", dataset=["/data/*.recordio"],
                                    transform=decode), batch_size=32, num_workers=2)

dataset_name trains another dataset of the job than train. Of an
index-range dataset (declared with Client.declare(records=...,
records_per_task=...), or the master's -datasets file) the master hands out
record indexes, not data: transform then receives each record's index and
reads the record from the trainer's own storage (trainmaster.Files maps an
index to a file and a record in it)::

    loader = DataLoader(TaskDataset(addr="127.0.0.1:8080", dataset_name="eval",
                                    transform=lambda i: load_example(i)), batch_size=32, num_workers=2)
"""

from __future__ import annotations

from typing import Any, Callable, Iterator, Optional, Sequence, Union

import multiprocessing

import torch.utils.data

from .client import DEFAULT_DATASET, Client
from .discovery import EtcdResolver

__all__ = ["TaskDataset"]


class TaskDataset(torch.utils.data.IterableDataset):
    """Yields transform(record) for every record of one pass the master
    hands this process: each iteration over it (each `for batch in
    loader:`) is one pass, the first pass 0, the next pass 1, and so on
    (Client.records(per_pass=True)); an iteration begun once all passes
    are done yields nothing. An iteration trains the pass current at the
    master when it begins, and ends when the master moves past it: with a
    DataLoader's workers, each a trainer, a worker that finds no task waits
    until the others' tasks of the pass are done, so that the epoch ends
    when the pass does. per_pass=False yields every pass in one iteration,
    until all are done.

    The workers of a DataLoader agree on the pass of an iteration through
    numbers they share (a multiprocessing.Array made with the dataset):
    the pass current at the master when the dataset is first iterated,
    then one more after each iteration that reached its pass's end; so a
    worker started late, after the others finished a short pass, yields
    nothing of the next. The workers of one iteration know each other by
    the DataLoader's base seed of the iteration (get_worker_info) and how
    many times the process iterated the dataset (persistent workers). A
    dataset made again (a new process) starts at the pass current then: so
    after StartRound, make the dataset anew to train the new round. The
    shared numbers reach the workers by inheritance, which needs the
    DataLoader's default start method on Linux, fork. The master is at addr, or found
    through etcd at endpoints; dataset, if given (glob patterns of RecordIO
    files), is reported first as the dataset train. name is the trainer's
    name the master shows, default "hostname-pid-xxxx": each DataLoader
    worker, a process of its own, is then a trainer of its own name (a name
    given is shared by the workers).

    dataset_name is the dataset of the job it trains (default "train"):
    another one must be declared (Client.declare, or the master's -datasets
    file). For a dataset of RecordIO files transform receives each record's
    bytes; for an index-range dataset, whose records carry no data,
    transform receives each record's index (an int in [0, records)) and
    reads the record from the user's storage. Without transform the bytes,
    or the index, are yielded as they are."""

    def __init__(self, *, addr: Optional[str] = None, endpoints: Optional[Sequence[str]] = None, namespace: str = "",
                 dataset: Optional[Sequence[str]] = None, token: Optional[str] = None,
                 transform: Optional[Callable[[Union[bytes, int]], Any]] = None, prefetch: int = 1,
                 name: Optional[str] = None, dataset_name: str = DEFAULT_DATASET, per_pass: bool = True) -> None:
        super().__init__()
        if (addr is None) == (endpoints is None):
            raise ValueError("give either addr or endpoints")
        self.addr, self.endpoints, self.namespace = addr, list(endpoints or []), namespace
        self.dataset = list(dataset) if dataset else None
        self.token, self.transform, self.prefetch, self.name = token, transform, prefetch, name
        if not isinstance(dataset_name, str):
            raise TypeError(f"dataset_name is a dataset's name, not {type(dataset_name).__name__} "
                            "(the files of train are dataset=)")
        self.dataset_name = dataset_name or DEFAULT_DATASET
        self.per_pass = per_pass
        # Shared by the workers (_pass_to_train): the iteration last begun
        # (base seed, count), its pass, and the pass of the next; -1: none.
        self._passes = multiprocessing.Array("q", [-1, -1, -1, -1])
        self._iterations = 0  # of this process

    def __iter__(self) -> Iterator[Any]:
        # Runs in each DataLoader worker: a client made here is that worker's.
        resolver = self.addr if self.addr is not None else EtcdResolver(self.endpoints, self.namespace)
        with Client(resolver, token=self.token, prefetch=self.prefetch, name=self.name,
                    dataset=self.dataset_name) as c:
            if self.dataset:
                c.report_dataset(self.dataset)
            # The main process asks the workers for batches in turn: a worker
            # waiting to be asked must not hold a task the other waits for
            # ("no task available" at the end of a pass) while the main
            # process waits for that other one. Tasks are finished once read.
            # A record of an index-range dataset has no data: its index
            # stands for it.
            of_pass = self._pass_to_train(c) if self.per_pass else None
            for rec in c.records(finish_when_read=True, per_pass=self.per_pass, of_pass=of_pass):
                item = rec.index if rec.data is None else rec.data
                yield self.transform(item) if self.transform else item
            if of_pass is not None:
                with self._passes.get_lock():
                    self._passes[_NEXT] = max(self._passes[_NEXT], of_pass + 1)

    def _pass_to_train(self, c: Client) -> int:
        """The pass this iteration trains: the one its first worker chose,
        which is the pass after the one the last iteration ended, or, at
        the first, the master's current pass."""
        info = torch.utils.data.get_worker_info()
        seed = (info.seed - info.id) & _SEED_MASK if info is not None else 0
        self._iterations += 1
        with self._passes.get_lock():
            shared = self._passes
            if (shared[_SEED], shared[_COUNT]) == (seed, self._iterations):
                return shared[_PASS]  # a sibling began this iteration
            p = shared[_NEXT] if shared[_NEXT] >= 0 else c.dataset_status().get("Pass", 0)
            shared[_SEED], shared[_COUNT], shared[_PASS] = seed, self._iterations, p
            return p


# The places in TaskDataset._passes, and the bits of a base seed kept.
_SEED, _COUNT, _PASS, _NEXT = range(4)
_SEED_MASK = (1 << 62) - 1
