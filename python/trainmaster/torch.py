"""A PyTorch IterableDataset over the master's tasks.

With a DataLoader and num_workers > 1, each worker process is a trainer of
its own (its own connection, its own tasks): the master hands each task of a
pass to one of them, so no record is yielded twice in a pass, unless a task
was taken back from a worker that stalled or died. A task counts as
consumed once a worker has read it (see Client.records(finish_when_read)):
the records a worker holds when it dies are not handed out again in that
pass, as a DataLoader's batched records would not be either.

    loader = DataLoader(TaskDataset(addr="127.0.0.1:8080", dataset=["/data/*.recordio"],
                                    transform=decode), batch_size=32, num_workers=2)
"""

from __future__ import annotations

from typing import Any, Callable, Iterator, Optional, Sequence

import torch.utils.data

from .client import Client
from .discovery import EtcdResolver

__all__ = ["TaskDataset"]


class TaskDataset(torch.utils.data.IterableDataset):
    """Yields transform(record) for every record the master hands this
    process, until all passes are done. The master is at addr, or found
    through etcd at endpoints; dataset, if given, is reported first. name is
    the trainer's name the master shows, default "hostname-pid-xxxx": each
    DataLoader worker, a process of its own, is then a trainer of its own
    name (a name given is shared by the workers)."""

    def __init__(self, *, addr: Optional[str] = None, endpoints: Optional[Sequence[str]] = None, namespace: str = "",
                 dataset: Optional[Sequence[str]] = None, token: Optional[str] = None,
                 transform: Optional[Callable[[bytes], Any]] = None, prefetch: int = 1,
                 name: Optional[str] = None) -> None:
        super().__init__()
        if (addr is None) == (endpoints is None):
            raise ValueError("give either addr or endpoints")
        self.addr, self.endpoints, self.namespace = addr, list(endpoints or []), namespace
        self.dataset = list(dataset) if dataset else None
        self.token, self.transform, self.prefetch, self.name = token, transform, prefetch, name

    def __iter__(self) -> Iterator[Any]:
        # Runs in each DataLoader worker: a client made here is that worker's.
        resolver = self.addr if self.addr is not None else EtcdResolver(self.endpoints, self.namespace)
        with Client(resolver, token=self.token, prefetch=self.prefetch, name=self.name) as c:
            if self.dataset:
                c.report_dataset(self.dataset)
            # The main process asks the workers for batches in turn: a worker
            # waiting to be asked must not hold a task the other waits for
            # ("no task available" at the end of a pass) while the main
            # process waits for that other one. Tasks are finished once read.
            for rec in c.records(finish_when_read=True):
                yield self.transform(rec.data) if self.transform else rec.data
