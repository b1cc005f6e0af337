"""The wire contract's shapes and constants, as the master sends and
receives them in JSON-RPC (go/wire; doc/protocol.md): tasks and the other
arguments as TypedDicts (plain dicts at run time, so that what travels is
exactly the JSON the master sends: it omits the fields that are zero), the
report codes as an IntEnum. go/wire/testdata/contract.json holds the values
both clients are tested against."""

from __future__ import annotations

import enum
import os
import random
import socket
from typing import List, NotRequired, Optional, Required, TypedDict

__all__ = [
    "Report", "NOT_OURS", "HEARD", "Block", "Task", "Progress", "ProgressReply", "Dataset", "DEFAULT_DATASET", "MAX_ERROR_BYTES",
    "MAX_TRAINER_NAME_BYTES", "DEFAULT_PROGRESS_INTERVAL", "MIN_PROGRESS_INTERVAL", "progress_every", "cut_reason", "trainer_name", "root",
]

# The dataset of calls that name none (wire.DefaultDataset): the one
# report_dataset reports.
DEFAULT_DATASET = "train"

# The most of a failure reason the master keeps (wire.MaxErrorBytes).
MAX_ERROR_BYTES = 1024

# The most of a trainer's name the master keeps (wire.MaxTrainerNameBytes).
MAX_TRAINER_NAME_BYTES = 128

# How often records() reports progress inside a task whose master asks
# nothing (Task's ProgressMillis; wire.DefaultProgressInterval), in seconds.
DEFAULT_PROGRESS_INTERVAL = 10.0

# The shortest interval between two progress reports of a dispatch the
# master records, and the shortest it asks for (wire.MinProgressInterval),
# in seconds.
MIN_PROGRESS_INTERVAL = 1.0


class Report(enum.IntEnum):
    """What the master did with a finish, failure or progress report
    (wire.Report)."""

    RECORDED = 1  # the report changed the task's state
    ALREADY_DONE = 2  # the task was already done in this pass
    STALE_PASS = 3  # the report is of a pass that is over
    SUPERSEDED = 4  # the dispatch is no longer the task's current one
    TOO_SOON = 5  # a progress report too close to the last one recorded


# The answers that say a task is no longer this trainer's (another trainer
# has it, or it is done): the rest of it is dropped, and it is not reported
# finished.
NOT_OURS = frozenset({Report.ALREADY_DONE, Report.STALE_PASS, Report.SUPERSEDED})

# The answers to a progress report whose To, when set, is where the task
# now ends.
HEARD = frozenset({Report.RECORDED, Report.TOO_SOON})


class Block(TypedDict):
    """One RecordIO chunk of a task (wire.Block)."""

    Path: str
    Idx: int
    Offset: int
    NumRecords: int


class Task(TypedDict, total=False):
    """A task as the master hands it out (wire.Task). Index, Epoch and Pass
    identify the dispatch; Blocks are its chunks, or Start and End the
    record indexes [Start, End) of a task of an index-range dataset; From
    and To the positions to start and stop at (0: the task's start and
    end); Seed the order of its records; Piece and Of say it is a piece of
    task Of; Dataset is omitted for train; ProgressMillis how often (in
    milliseconds, from the task's start) its holder is to report progress
    in it (see progress_every). The master omits every field that is
    zero."""

    Index: Required[int]
    Epoch: Required[int]
    Pass: Required[int]
    Blocks: Optional[List[Block]]
    Error: str
    Trainer: str
    Seed: int
    From: int
    To: int
    Piece: bool
    Of: int
    Dataset: str
    Start: int
    End: int
    ProgressMillis: int


class Progress(TypedDict):
    """What TaskProgress carries (wire.Progress): the dispatch, and the
    position Done reached in its record order."""

    Index: int
    Epoch: int
    Pass: int
    Trainer: NotRequired[str]
    Dataset: NotRequired[str]
    Done: int


class ProgressReply(TypedDict):
    """TaskProgress's answer (wire.ProgressReply), To 0 when the master
    omits it: the task's end, unchanged."""

    Report: int
    To: int


class Dataset(TypedDict, total=False):
    """A named dataset as DeclareDataset takes it (wire.Dataset); only the
    fields given are sent."""

    Name: Required[str]
    Patterns: List[str]
    ChunksPerTask: int
    Records: int
    RecordsPerTask: int
    Passes: int
    Endless: bool  # passes without end, until the job is stopped (Passes 0)


def root(task: Task) -> int:
    """The task whose records task covers (wire.Task.Root): Of for a piece
    (Of 0 is omitted on the wire), else Index."""
    return (task.get("Of") or 0) if task.get("Piece") else task["Index"]


def _cut(raw: bytes, limit: int) -> str:
    """The first limit bytes of UTF-8 text, cut at a character boundary."""
    return raw[:limit].decode(errors="ignore")


def cut_reason(reason: str) -> str:
    """A failure reason cut to MAX_ERROR_BYTES, as wire.CutReason cuts it."""
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


def progress_every(task: Task) -> float:
    """How often, in seconds, task asks its holder to report progress
    (wire.Task.ProgressMillis): DEFAULT_PROGRESS_INTERVAL when it asks
    nothing, never less than MIN_PROGRESS_INTERVAL."""
    millis = task.get("ProgressMillis") or 0
    if millis <= 0:
        return DEFAULT_PROGRESS_INTERVAL
    return max(millis / 1000, MIN_PROGRESS_INTERVAL)
