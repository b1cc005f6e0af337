"""The order of a task's records when the master gives it a seed
(wire.Task.Seed, the master's -shuffle-seed): the same algorithm as
go/wire.Shuffle, which is part of the contract (doc/protocol.md), so that a
Python trainer trains a task's records in the same order as a Go one."""

from __future__ import annotations

from typing import List

__all__ = ["shuffle"]

_MASK = (1 << 64) - 1


def shuffle(n: int, seed: int) -> List[int]:
    """The order in which to train the n records of a task whose Seed is
    seed: a permutation of 0..n-1, record order[0] first. Fisher-Yates from
    the last index down, drawing from splitmix64 with its state set to seed
    (go/wire/testdata/contract.json holds vectors both clients are tested
    against)."""
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

