"""trainmaster: train from the elastic-training master in Python.

The master cuts a RecordIO dataset into tasks and hands them to trainers;
this package is a trainer's side of it, with nothing to install but
Python 3 (snappy-compressed files need Debian's python3-snappy)::

    import trainmaster
    for record in trainmaster.records(endpoints=["http://127.0.0.1:2379"],
                                      dataset=["/data/*.recordio"]):
        train_on(record.data)

``Client`` gives more control, and trains named datasets besides train:
``Client(addr, dataset="eval")`` declares one (``declare``: RecordIO files,
or an index-range dataset whose records it yields as indexes, which
``Files`` maps to the trainer's files), runs it again (``start_round``) and
shows its progress (``dataset_status``). ``Client.batches`` yields one pass in
batches, as a rank of a group of ranks too (synchronous data-parallel
training: every rank the same number of batches). ``trainmaster.torch.TaskDataset`` feeds a
PyTorch DataLoader, and ``trainmaster.torch.DataLoader`` is one whose main
process is the trainer (DDP); ``python -m trainmaster`` reads RecordIO files and runs
a trainer that prints per-pass digests like cmd/trainer's. ``records``,
``TaskDataset`` and ``python -m trainmaster train`` train train by default,
and another dataset of the job with ``dataset_name=`` (``--dataset-name``).
``Client.checkpoint`` and ``Client.rewind`` save the data position with the
model and go back to it after a crash (``trainmaster.torch.DataLoader``'s
``state_dict`` and ``load_state_dict``): every record trained exactly once
into the model that goes on.
"""

from __future__ import annotations

import ssl
from typing import Iterator, Optional, Sequence

from .batches import Batches
from .client import DEFAULT_DATASET, Client, Record
from .digest import Digest
from .discovery import EtcdResolver, addr_key
from .errors import (AllDone, BadCheckpoint, BadGroup, CheckpointIncomplete, ConnectionLost, MasterError, NoDataset,
                     NoTask, NotServing, PassOver, PassTooSmall, RankDone, RoundRunning, Unauthorized,
                     UnknownCheckpoint)
from .files import Files
from .recordio import RecordIOError
from .wire import Report

__all__ = [
    "records", "Client", "Record", "Report", "Files", "DEFAULT_DATASET", "Digest", "EtcdResolver", "addr_key", "RecordIOError",
    "MasterError", "NoTask", "AllDone", "PassOver", "NoDataset", "NotServing", "Unauthorized", "RoundRunning", "ConnectionLost",
    "RankDone", "BadGroup", "PassTooSmall", "Batches", "UnknownCheckpoint", "CheckpointIncomplete", "BadCheckpoint",
]


def records(*, addr: Optional[str] = None, endpoints: Optional[Sequence[str]] = None, namespace: str = "",
            dataset: Optional[Sequence[str]] = None, token: Optional[str] = None,
            tls: Optional[ssl.SSLContext] = None, prefetch: int = 1, name: Optional[str] = None,
            dataset_name: str = DEFAULT_DATASET, per_pass: bool = False) -> Iterator[Record]:
    """Yields every record the master hands this trainer, until all passes
    are done; with per_pass, the records of one pass only (Client.records'
    per_pass: the pass current when it begins). The master is found at addr, or through etcd at endpoints
    (NS/master/addr); dataset, if given (glob patterns of RecordIO files),
    is reported first as the dataset train. name is the trainer's name the
    master shows (default "hostname-pid-xxxx"). dataset_name is the dataset
    of the job to train (default "train"; Client's dataset): another one
    must be declared (the master's -datasets file, or Client.declare); the
    records of an index-range dataset come with data None and their index
    (Record.index), for the trainer to read from its own storage."""
    if (addr is None) == (endpoints is None):
        raise ValueError("give either addr or endpoints")
    resolver = addr if addr is not None else EtcdResolver(endpoints or [], namespace)
    with Client(resolver, token=token, tls=tls, prefetch=prefetch, name=name, dataset=dataset_name) as c:
        if dataset:
            c.report_dataset(dataset)
        yield from c.records(per_pass=per_pass)
