"""Record indexes of an index-range dataset mapped to the trainer's files.

An index-range dataset (Client.declare(records=..., records_per_task=...))
hands out tasks as ranges of record indexes; the trainer maps them to its
own storage. Files does so for records laid out in files, one after the
other: the records of paths[0] are indexes 0 to counts[0]-1, those of
paths[1] follow, and so on::

    files = Files(["a.bin", "b.bin"], [1000, 500])
    c.declare(records=files.records(), records_per_task=100)
    files.locate(1200)        # ("b.bin", 200)
    files.spans(900, 1100)    # [("a.bin", 900, 1000), ("b.bin", 0, 100)]
    for rec in c.records():
        path, i = files.locate(rec.index)
"""

from __future__ import annotations

import bisect
import operator
from typing import List, Sequence, Tuple

from . import recordio

__all__ = ["Files"]


class Files:
    """The record indexes of a dataset whose records are those of paths,
    counts[i] of them in paths[i], in order. Construction refuses a
    mismatch of paths and counts, a negative or non-integer count and a
    file listed twice, naming it; locate and spans refuse an index or a
    range outside the dataset, naming it."""

    def __init__(self, paths: Sequence[str], counts: Sequence[int]) -> None:
        paths, counts = list(paths), list(counts)
        if len(paths) != len(counts):
            raise ValueError(f"files: {len(paths)} files but {len(counts)} record counts")
        seen = set()
        starts = [0]
        for path, count in zip(paths, counts):
            try:
                n = operator.index(count)  # an int, not a float
            except TypeError:
                raise TypeError(f"files: {path!r}: record count {count!r} is not an integer") from None
            if n < 0:
                raise ValueError(f"files: {path!r}: {n} records (want 0 or more)")
            if path in seen:
                raise ValueError(f"files: {path!r} is listed twice")
            seen.add(path)
            starts.append(starts[-1] + n)
        self.paths: Tuple[str, ...] = tuple(paths)
        self.counts: Tuple[int, ...] = tuple(starts[i + 1] - starts[i] for i in range(len(paths)))
        self._starts = starts  # the index of each file's first record, then the total

    @classmethod
    def from_recordio(cls, paths: Sequence[str]) -> "Files":
        """The records of RecordIO files, counted from their chunk headers
        (no record is read); a file that cannot be indexed raises
        RecordIOError naming it."""
        paths = list(paths)
        return cls(paths, [sum(h.records for h in recordio.index(p)) for p in paths])

    def records(self) -> int:
        """The dataset's records: what Client.declare(records=...) takes."""
        return self._starts[-1]

    def locate(self, index: int) -> Tuple[str, int]:
        """The file holding the record of dataset index `index`, and the
        record's place in that file, from 0."""
        index = self._index(index, "record index")
        if not 0 <= index < self._starts[-1]:
            raise IndexError(f"files: record index {index} is outside the dataset's {self._describe()}")
        f = bisect.bisect_right(self._starts, index, 0, len(self.paths)) - 1
        return self.paths[f], index - self._starts[f]

    def spans(self, start: int, end: int) -> List[Tuple[str, int, int]]:
        """The records of dataset indexes [start, end) (a task's Start and
        End) as (path, from, to): the records from to to-1 of each file
        they reach, in order; files without records in the range are left
        out, and an empty range gives []."""
        start, end = self._index(start, "range start"), self._index(end, "range end")
        if not 0 <= start <= end <= self._starts[-1]:
            raise IndexError(f"files: record range [{start}, {end}) is outside the dataset's {self._describe()}")
        spans: List[Tuple[str, int, int]] = []
        if start == end:
            return spans
        f = bisect.bisect_right(self._starts, start, 0, len(self.paths)) - 1
        while f < len(self.paths) and self._starts[f] < end:
            first, past = self._starts[f], self._starts[f + 1]
            lo, hi = max(start, first) - first, min(end, past) - first
            if hi > lo:
                spans.append((self.paths[f], lo, hi))
            f += 1
        return spans

    @staticmethod
    def _index(value: int, what: str) -> int:
        try:
            return operator.index(value)
        except TypeError:
            raise TypeError(f"files: {what} {value!r} is not an integer") from None

    def _describe(self) -> str:
        total = self._starts[-1]
        if total == 0:
            return f"0 records ({len(self.paths)} files, all empty)"
        return f"{total} records (indexes 0 to {total - 1}, in {len(self.paths)} files)"

    def __repr__(self) -> str:
        return f"Files({len(self.paths)} files, {self._starts[-1]} records)"
