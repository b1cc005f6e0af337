"""Reading a task: its records (the chunks its blocks name, or the record
indexes of an index-range task) in its record order, the one positions
(From, To, TaskProgress) count in. go/wire/testdata/contract.json holds
tasks and the positions and records both clients yield of them."""

from __future__ import annotations

import itertools
from typing import Any, List, Tuple

from . import recordio
from .shuffle import shuffle
from .wire import Task

__all__ = ["BadRange", "is_range", "task_indexes", "read_task", "in_training_order", "training_order"]


class BadRange(ValueError):
    """A range task whose range is no range: it is reported failed."""


def is_range(task: Task) -> bool:
    """Whether task is of an index-range dataset: it covers the record
    indexes [Start, End) and has no blocks (the master omits Start 0)."""
    return not task.get("Blocks") and (task.get("End") or 0) > 0


def task_indexes(task: Task) -> List[int]:
    """The record indexes of an index-range task in its record order: Start
    + i for position i, or, for a task with a Seed, Start + shuffle(End -
    Start, Seed)[i], the order the records of a RecordIO task are trained
    in."""
    start, end = task.get("Start") or 0, task.get("End") or 0
    if not 0 <= start <= end:
        raise BadRange(f"task {task.get('Index')}: bad record range [{start}, {end})")
    seed = task.get("Seed") or 0
    if not seed:
        return list(range(start, end))
    return [start + i for i in shuffle(end - start, seed)]


def read_task(task: Task) -> List[bytes]:
    """Reads the records of a task's blocks, checking each block holds the
    records the master says: a task is yielded only once all of it read
    cleanly. A task trained in file order (no Seed) skips the blocks wholly
    outside its From and To (a task resumed, a piece of one): their
    positions hold b"" placeholders, which the records() loop never yields
    (it starts at From and cuts at To). A task without From and To, or a
    shuffled one (its positions are not the file's), is read whole."""
    records: List[bytes] = []
    in_file_order = not task.get("Seed")
    start, to = task.get("From") or 0, task.get("To") or 0
    for block in task.get("Blocks") or []:
        n, pos = block.get("NumRecords") or 0, len(records)
        if in_file_order and n > 0 and (pos + n <= start or 0 < to <= pos):
            records.extend(itertools.repeat(b"", n))
            continue
        chunk = recordio.read_chunk(block["Path"], block["Offset"], block["Idx"])
        if len(chunk) != block["NumRecords"]:
            raise recordio.RecordIOError(
                f"recordio: {block['Path']}: chunk {block['Idx']} at offset {block['Offset']}: "
                f"record count mismatch: the master says {block['NumRecords']}, the chunk holds {len(chunk)}")
        records.extend(chunk)
    return records


def in_training_order(task: Task, records: List[bytes]) -> List[bytes]:
    """A task's records in the order to train them: the file's, or, when
    the master gave the task a Seed (a job with a -shuffle-seed), the order
    shuffle draws from it."""
    seed = task.get("Seed") or 0
    if not seed:
        return records
    return [records[i] for i in shuffle(len(records), seed)]


def training_order(task: Task) -> Tuple[List[Any], bool]:
    """Everything of task, in its record order, and whether it is a range
    task: its record indexes (task_indexes) then, else its records, read
    (read_task). Raises BadRange, recordio.RecordIOError or OSError for a
    task that cannot be read."""
    if is_range(task):
        return task_indexes(task), True
    return in_training_order(task, read_task(task)), False
