"""What the DDP rank scripts (ddp_rank.py, ddp_checkpoint_rank.py) share:
their records' parser and the fault specs they take."""

from __future__ import annotations

import torch


def parse(record: bytes):
    """A record "id x1 x2 y": its id, features and target."""
    i, x1, x2, y = record.split()
    return int(i), torch.tensor([float(x1), float(x2)]), torch.tensor([float(y)])


def at(spec, rank):
    """(epoch, step) of a "R:E:S" spec for rank R, else None."""
    if not spec:
        return None
    r, e, s = map(int, spec.split(":"))
    return (e, s) if r == rank else None
