"""The contract's errors (go/wire's texts), as Python exceptions."""

from __future__ import annotations

__all__ = [
    "MasterError", "NoTask", "AllDone", "PassOver", "NoDataset", "NotServing", "Unauthorized", "RoundRunning",
    "RankDone", "BadGroup", "PassTooSmall", "UnknownCheckpoint", "CheckpointIncomplete", "BadCheckpoint",
    "ConnectionLost", "from_text",
]

# The error texts of the wire contract (wire.Text*, doc/protocol.md); stable:
# go/wire/testdata/contract.json holds them, for both clients' tests.
TEXT_NO_TASK = "no task available"
TEXT_ALL_DONE = "all passes done"
TEXT_NO_DATASET = "dataset not reported"
TEXT_NOT_SERVING = "master is not serving"
TEXT_UNAUTHORIZED = "not authenticated"
TEXT_ROUND_RUNNING = "round still running"
TEXT_PASS_OVER = "pass over"
# Groups of ranks (go/wire/group.go).
TEXT_RANK_DONE = "rank done"
TEXT_BAD_GROUP = "bad group"
TEXT_PASS_TOO_SMALL = "pass too small for the group"
# Data checkpoints (go/wire/checkpoint.go).
TEXT_UNKNOWN_CHECKPOINT = "unknown checkpoint"
TEXT_CHECKPOINT_INCOMPLETE = "checkpoint incomplete"
TEXT_BAD_CHECKPOINT = "bad checkpoint"


class MasterError(Exception):
    """An error the master answered: the message is its text."""


class NoTask(MasterError):
    """Every task of the pass is out with other trainers: ask again later."""


class AllDone(MasterError):
    """Every pass is over."""


class PassOver(MasterError):
    """The pass a per-pass loop trains is over (get_task(one_pass=...)):
    the master is at another pass."""


class NoDataset(MasterError):
    """The dataset the call is about was not reported or declared yet (a
    master that lost it after a failover, or a job not started)."""


class NotServing(MasterError):
    """This master does not serve (a standby, or one that lost the lock):
    find the current one and call again."""


class Unauthorized(MasterError):
    """The master wants a token and this client presented none or a wrong
    one: final."""


class RoundRunning(MasterError):
    """StartRound asked for the next round of a dataset whose current round
    is not over: ask again once it is."""


class RankDone(MasterError):
    """The rank asking (a GetTask of a group of ranks) has been handed its
    whole share of the pass: it has no more tasks in it. Its next pass
    waits ("no task available") until this one is over."""


class BadGroup(MasterError):
    """The group a rank names disagrees with the group training the pass
    (its size or batch size), the rank is out of range, or a trainer
    outside the group asks while a group trains the pass (or the reverse):
    final, the message names both sides."""


class PassTooSmall(MasterError):
    """The pass has too few records to give every rank of the group the
    same number of non-empty batches (fewer records than ranks, or batch
    size 1 with shares that differ): final, the message names the
    numbers."""


class UnknownCheckpoint(MasterError):
    """Rewind named a checkpoint the master does not keep (never taken, or
    dropped past its -checkpoints-kept): final; the message names the
    checkpoints kept."""


class CheckpointIncomplete(MasterError):
    """Not every trainer of a checkpoint reported within the master's
    -checkpoint-wait (a rank died, or is far behind), or the trainers named
    different numbers of trainers: nothing was stored. Take it again."""


class BadCheckpoint(MasterError):
    """A checkpoint or rewind outside the contract's bounds (a name empty
    or too long, too many held tasks, a position past a task's end), or a
    rewind to a checkpoint of a dataset cut otherwise since: final."""


class ConnectionLost(Exception):
    """The connection to the master failed: the call is retried elsewhere."""


def from_text(text: str) -> MasterError:
    """The exception for an error text the master answered; a class matches
    when the text contains its contract text, as go/wire.Is does (the master
    wraps the contract's errors with its reasons)."""
    for cls, known in ((NotServing, TEXT_NOT_SERVING), (Unauthorized, TEXT_UNAUTHORIZED),
                       (BadGroup, TEXT_BAD_GROUP), (PassTooSmall, TEXT_PASS_TOO_SMALL), (RankDone, TEXT_RANK_DONE),
                       (AllDone, TEXT_ALL_DONE), (NoTask, TEXT_NO_TASK), (NoDataset, TEXT_NO_DATASET),
                       (RoundRunning, TEXT_ROUND_RUNNING), (PassOver, TEXT_PASS_OVER),
                       (UnknownCheckpoint, TEXT_UNKNOWN_CHECKPOINT), (CheckpointIncomplete, TEXT_CHECKPOINT_INCOMPLETE),
                       (BadCheckpoint, TEXT_BAD_CHECKPOINT)):
        if known in text:
            return cls(text)
    return MasterError(text)
