"""The order-independent digest of a collection of records, equal to
go/client's Digest and to what cmd/trainer prints."""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass

__all__ = ["Digest"]


@dataclass
class Digest:
    """Sum, modulo 2**64, over the records of the first 8 bytes (big-endian)
    of SHA-256(uint32 little-endian length + record); with the number of
    records and bytes. Digests of trainers that shared a pass add up to the
    digest of the whole dataset."""

    records: int = 0
    bytes: int = 0
    sum: int = 0

    def add(self, record: bytes) -> None:
        h = hashlib.sha256(struct.pack("<I", len(record)))
        h.update(record)
        self.sum = (self.sum + int.from_bytes(h.digest()[:8], "big")) % (1 << 64)
        self.records += 1
        self.bytes += len(record)

    def combine(self, other: "Digest") -> None:
        self.records += other.records
        self.bytes += other.bytes
        self.sum = (self.sum + other.sum) % (1 << 64)

    def __str__(self) -> str:
        return f"{self.sum:016x}"
