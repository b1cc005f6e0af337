"""The order of a task's records when the master gives it a seed
(wire.Task.Seed, the master's -shuffle-seed): the same algorithm as
go/wire.Shuffle, which is part of the contract (doc/protocol.md), so that a
Python trainer trains a task's records in the same order as a Go one."""

from __future__ import annotations

from typing import Any, Dict, List

__all__ = ["shuffle", "in_training_order"]

_MASK = (1 << 64) - 1


def shuffle(n: int, seed: int) -> List[int]:
    """The order in which to train the n records of a task whose Seed is
    seed: a permutation of 0..n-1, record order[0] first. Fisher-Yates from
    the last index down, drawing from splitmix64 with its state set to seed;
    shuffle(10, 42) == [0, 9, 5, 8, 6, 4, 7, 2, 1, 3], as in Go."""
    order = list(range(max(n, 0)))
    state = seed & _MASK
    for i in range(len(order) - 1, 0, -1):
        state = (state + 0x9E3779B97F4A7C15) & _MASK
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
        z ^= z >> 31
        j = z % (i + 1)
        order[i], order[j] = order[j], order[i]
    return order


def in_training_order(task: Dict[str, Any], records: List[bytes]) -> List[bytes]:
    """A task's records in the order to train them: the file's, or, when
    the master gave the task a Seed (a job with a -shuffle-seed), the order
    shuffle draws from it. Positions in a task (From, TaskProgress) count
    in this order."""
    seed = task.get("Seed") or 0
    if not seed:
        return records
    return [records[i] for i in shuffle(len(records), seed)]
