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

from .errors import BadCheckpoint, BadGroup, PassTooSmall

__all__ = [
    "Report", "NOT_OURS", "HEARD", "Block", "Task", "Progress", "ProgressReply", "Dataset", "DEFAULT_DATASET", "MAX_ERROR_BYTES",
    "MAX_TRAINER_NAME_BYTES", "DEFAULT_PROGRESS_INTERVAL", "MIN_PROGRESS_INTERVAL", "progress_every", "cut_reason", "trainer_name", "root",
    "MAX_RANKS", "MAX_BATCH_SIZE", "check_rank", "group_share", "group_batches", "batch_sizes", "check_pass",
    "MAX_CHECKPOINT_NAME_BYTES", "MAX_HELD", "Held", "Checkpoint", "CheckpointReply", "Rewind", "RewindReply",
    "check_checkpoint", "check_rewind",
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

# The most ranks a group holds, and the most records in a rank's batch
# (wire.MaxRanks, wire.MaxBatchSize): what a GetTask of a rank may ask for.
MAX_RANKS = 1 << 16
MAX_BATCH_SIZE = 1 << 20

# The most bytes of a checkpoint's name (and of a rewind's restart), and the
# most tasks one trainer's checkpoint report holds (wire.MaxCheckpointNameBytes,
# wire.MaxHeld).
MAX_CHECKPOINT_NAME_BYTES = 128
MAX_HELD = 1024


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
    zero.

    Rank, Ranks and Batch are set by a rank of a group of ranks in GetTask's
    argument (rank Rank of Ranks, forming batches of Batch records; the
    master echoes them); RankRecords, RankBatches and RankLeft are, in a
    task handed to a rank, its plan of the pass: its share of the pass's
    records, the batches every rank forms, and what of its share is still
    to be handed to it after this task (0, omitted: this task ends it).
    See group_share and batch_sizes.

    Gen is, in a task handed out, the generation of its dataset's pass
    state (0 until the first Master.Rewind): it goes back in every report
    of the task (a report of an older generation is answered stale pass).
    Ask, in GetTask's argument, numbers the call: a retry of the same call
    sends the same number, and the master answers it the dispatch that
    answered the call whose reply was lost."""

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
    OnePass: bool
    Rank: int
    Ranks: int
    Batch: int
    RankRecords: int
    RankBatches: int
    RankLeft: int
    Gen: int
    Ask: int


class Progress(TypedDict):
    """What TaskProgress carries (wire.Progress): the dispatch (with its
    Gen, omitted at 0), and the position Done reached in its record
    order."""

    Index: int
    Epoch: int
    Pass: int
    Trainer: NotRequired[str]
    Dataset: NotRequired[str]
    Done: int
    Gen: NotRequired[int]


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


class Held(TypedDict):
    """A task a trainer holds or held, in its checkpoint report
    (wire.Held): the dispatch as GetTask handed it out, and Done, the
    position in the task's record order before which every record was
    trained. Dataset is omitted for train, Gen at 0."""

    Index: int
    Epoch: int
    Pass: int
    Done: int
    Dataset: NotRequired[str]
    Gen: NotRequired[int]


class Checkpoint(TypedDict):
    """What Master.Checkpoint carries (wire.Checkpoint): the checkpoint's
    name, the same from every trainer taking it; how many trainers take it
    together; whether to keep it beyond -checkpoints-kept; and what this
    trainer holds trained that the master may not know yet."""

    Name: str
    Trainer: NotRequired[str]
    Trainers: int
    Pin: NotRequired[bool]
    Held: NotRequired[List[Held]]


class CheckpointReply(TypedDict):
    """Master.Checkpoint's answer (wire.CheckpointReply): the checkpoint's
    ID, the same to every trainer of it, and the IDs kept after it, oldest
    first."""

    ID: int
    Kept: List[int]


class Rewind(TypedDict):
    """What Master.Rewind carries (wire.Rewind): the checkpoint to go back
    to, and the restart's name, the same from every rank of it."""

    ID: int
    Restart: str
    Trainer: NotRequired[str]


class RewindReply(TypedDict):
    """Master.Rewind's answer (wire.RewindReply): whether this call rewound
    (False: an earlier call of the same restart did), and the datasets
    taken back, sorted."""

    Rewound: bool
    Datasets: List[str]


def check_checkpoint(name: str, trainers: int, held: int = 0) -> None:
    """Raises BadCheckpoint when a checkpoint named name, taken by trainers
    trainers, reporting held tasks, is outside the contract's bounds
    (wire.Checkpoint.Check), before it is sent."""
    size = len(name.encode())
    if not 1 <= size <= MAX_CHECKPOINT_NAME_BYTES:
        raise BadCheckpoint(f"bad checkpoint: a name of {size} bytes (want 1 to {MAX_CHECKPOINT_NAME_BYTES})")
    if not 1 <= trainers <= MAX_RANKS:
        raise BadCheckpoint(f"bad checkpoint: checkpoint {name!r} taken by {trainers} trainers (want 1 to {MAX_RANKS})")
    if held > MAX_HELD:
        raise BadCheckpoint(f"bad checkpoint: checkpoint {name!r}: {held} tasks held (at most {MAX_HELD})")


def check_rewind(checkpoint_id: int, restart: str) -> None:
    """Raises BadCheckpoint when a rewind to checkpoint_id for restart is
    outside the contract's bounds (wire.Rewind.Check)."""
    size = len(restart.encode())
    if checkpoint_id < 1 or not 1 <= size <= MAX_CHECKPOINT_NAME_BYTES:
        raise BadCheckpoint(f"bad checkpoint: rewind to checkpoint {checkpoint_id} for a restart of {size} bytes "
                            f"(want an ID from 1, a restart of 1 to {MAX_CHECKPOINT_NAME_BYTES} bytes)")


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


# Groups of ranks (go/wire/group.go): synchronous data-parallel training,
# where every rank of a group must form the same number of batches in a
# pass. For a pass of N records, W ranks and batch size B: rank r's share
# is N // W, plus one for each of the first N % W ranks; every rank forms
# K = ceil(ceil(N / W) / B) batches; a rank's batches are K-1 of B and the
# rest, or, for a share of exactly (K-1)*B, K-2 of B then B-1 and 1.
# go/wire/testdata/contract.json holds the plans both clients are tested
# against (group_plans, group_refusals).


def check_rank(rank: int, ranks: int, batch: int) -> None:
    """Raises BadGroup when rank of a group of ranks ranks with batch size
    batch is outside the contract's bounds (wire.Group.CheckRank)."""
    if not 1 <= ranks <= MAX_RANKS:
        raise BadGroup(f"bad group: a group of {ranks} ranks (want 1 to {MAX_RANKS})")
    if not 1 <= batch <= MAX_BATCH_SIZE:
        raise BadGroup(f"bad group: batch size {batch} (want 1 to {MAX_BATCH_SIZE})")
    if not 0 <= rank < ranks:
        raise BadGroup(f"bad group: rank {rank} of a group of {ranks} ranks (want 0 to {ranks - 1})")


def group_share(records: int, ranks: int, rank: int) -> int:
    """Rank rank's share of a pass of records records (wire.Group.Share)."""
    return records // ranks + (1 if rank < records % ranks else 0)


def group_batches(records: int, ranks: int, batch: int) -> int:
    """K, the batches every rank of a group of ranks ranks with batch size
    batch forms in a pass of records records (wire.Group.Batches)."""
    most = -(-records // ranks)
    return -(-most // batch)


def check_pass(records: int, ranks: int, batch: int) -> None:
    """Raises PassTooSmall when a pass of records records cannot give every
    rank the same number of non-empty batches (wire.Group.CheckPass)."""
    if records < ranks:
        raise PassTooSmall(f"pass too small for the group: {records} records in the pass, {ranks} ranks: "
                           "every rank needs one at least")
    if batch == 1 and records % ranks != 0:
        raise PassTooSmall(f"pass too small for the group: {records} records in the pass, {ranks} ranks, batch size 1: "
                           "the shares differ, and batches of one cannot even them (give batch size 2 or more)")


def batch_sizes(share: int, batches: int, batch: int) -> Optional[List[int]]:
    """The sizes of the batches a rank forms of its share of a pass whose
    ranks form batches batches each, of batch records at most
    (wire.BatchSizes): batches-1 of batch records and the rest, or, for a
    share of exactly (batches-1)*batch records, batches-2 full ones then
    batch-1 and 1. None for a share no plan fits (check_pass refuses such
    passes)."""
    full = (batches - 1) * batch
    if batches < 1 or batch < 1 or share > full + batch or share < full:
        return None
    if share > full:
        return [batch] * (batches - 1) + [share - full]
    if batches < 2 or batch < 2:
        return None
    return [batch] * (batches - 2) + [batch - 1, 1]
