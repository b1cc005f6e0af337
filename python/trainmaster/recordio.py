"""RecordIO reading, byte-compatible with go/recordio and the reference library.

A file is a sequence of chunks, each a 20-byte header (magic 0x01020304,
CRC-32 of the stored payload, compressor, payload size, record count; all
uint32 little-endian) and its payload: each record as a uint32 length and
its bytes, stored as is (0), framed snappy (1) or gzip (2). Gzip and the
uncompressed form need only the standard library; snappy needs the
``snappy`` module (Debian: ``python3-snappy``).

Every error is a :class:`RecordIOError` naming the file, the chunk and its
byte offset, with the same problem texts as go/recordio (doc/recordio.md).
"""

from __future__ import annotations

import os
import stat
import struct
import zlib
from dataclasses import dataclass
from typing import BinaryIO, Iterator, List

MAGIC = 0x01020304
HEADER = struct.Struct("<IIIII")
NONE, SNAPPY, GZIP = 0, 1, 2
MAX_CHUNK_BYTES = 1 << 30  # the most a chunk may take decompressed

__all__ = ["RecordIOError", "ChunkHeader", "read_chunk", "scan", "index", "open_file"]


class RecordIOError(Exception):
    """A RecordIO file cannot be read; the message names the file, the chunk
    and its offset, then the problem."""


@dataclass(frozen=True)
class ChunkHeader:
    """What a chunk header says, and where the chunk is."""

    index: int
    offset: int
    checksum: int
    compressor: int
    size: int
    records: int


def open_file(path: str) -> BinaryIO:
    """Opens path for reading without blocking, refusing anything but a
    regular file (a FIFO would make an open wait for a writer)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = "a named pipe (FIFO)" if stat.S_ISFIFO(mode) else "a directory" if stat.S_ISDIR(mode) else "not a regular file"
            raise RecordIOError(f"recordio: {path} is {kind}: not a regular file")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _fail(path: str, index: int, offset: int, problem: str) -> RecordIOError:
    return RecordIOError(f"recordio: {path}: chunk {index} at offset {offset}: {problem}")


def _header(f: BinaryIO, path: str, index: int, offset: int, file_size: int) -> ChunkHeader | None:
    raw = f.read(HEADER.size)
    if not raw:
        return None
    if len(raw) < HEADER.size:
        raise _fail(path, index, offset, "truncated: the file ends inside a chunk header")
    magic, checksum, compressor, size, records = HEADER.unpack(raw)
    if magic != MAGIC:
        what = "not a RecordIO file" if offset == 0 else "no chunk header here"
        raise _fail(path, index, offset, f"bad magic: {what}")
    if compressor not in (NONE, SNAPPY, GZIP):
        raise _fail(path, index, offset, "unknown compressor")
    if offset + HEADER.size + size > file_size:
        raise _fail(path, index, offset, f"truncated: payload of {size} bytes past the end of the file")
    return ChunkHeader(index, offset, checksum, compressor, size, records)


def _decompress(payload: bytes, compressor: int) -> bytes:
    if compressor == NONE:
        return payload
    if compressor == GZIP:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        out = d.decompress(payload, MAX_CHUNK_BYTES + 1)
        if len(out) > MAX_CHUNK_BYTES:
            raise ValueError("chunk too large")
        if not d.eof:
            raise zlib.error("incomplete gzip stream")
        return out
    return _unframe_snappy(payload)


def _crc32c_table() -> List[int]:
    table = []
    for i in range(256):
        crc = i
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return table


_CRC32C = _crc32c_table()


def _masked_crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    table = _CRC32C
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    crc ^= 0xFFFFFFFF
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _unframe_snappy(payload: bytes) -> bytes:
    """Decodes snappy's framing format: a stream identifier, then frames
    of a type byte, a 3-byte length and the data; each data frame checked
    against its masked CRC-32C. Blocks are decompressed with the snappy
    module (python-snappy's own stream decoder fails on Debian's Python)."""
    try:
        import snappy  # type: ignore[import-not-found]
    except ImportError as e:
        raise RecordIOError(
            "recordio: a snappy-compressed chunk needs the snappy module: install Debian's python3-snappy"
        ) from e
    out, pos, total = [], 0, 0
    while pos < len(payload):
        if pos + 4 > len(payload):
            raise ValueError("snappy frame header truncated")
        kind = payload[pos]
        n = int.from_bytes(payload[pos + 1 : pos + 4], "little")
        data = payload[pos + 4 : pos + 4 + n]
        if len(data) < n:
            raise ValueError("snappy frame truncated")
        pos += 4 + n
        if kind == 0xFF:
            if data != b"sNaPpY":
                raise ValueError("bad snappy stream identifier")
            continue
        if kind in (0x00, 0x01):
            if n < 4:
                raise ValueError("snappy frame too short")
            crc = int.from_bytes(data[:4], "little")
            block = snappy.decompress(data[4:]) if kind == 0x00 else data[4:]
            if _masked_crc32c(block) != crc:
                raise ValueError("snappy frame checksum mismatch")
            total += len(block)
            if total > MAX_CHUNK_BYTES:
                raise ValueError("chunk too large")
            out.append(block)
        elif kind <= 0x7F:
            raise ValueError(f"unknown snappy frame type {kind:#04x}")
    return b"".join(out)


def _records(data: bytes, count: int) -> List[bytes]:
    records, pos = [], 0
    while pos < len(data):
        if pos + 4 > len(data):
            raise ValueError("record length past the payload")
        (n,) = struct.unpack_from("<I", data, pos)
        pos += 4
        if pos + n > len(data):
            raise ValueError("record length past the payload")
        records.append(data[pos : pos + n])
        pos += n
    if len(records) != count:
        raise ValueError(f"record count mismatch: header says {count}, payload holds {len(records)}")
    return records


def _payload_records(path: str, h: ChunkHeader, payload: bytes) -> List[bytes]:
    if len(payload) < h.size:
        raise _fail(path, h.index, h.offset, "truncated: the file ends inside a payload")
    crc = zlib.crc32(payload) & 0xFFFFFFFF
    if crc != h.checksum:
        raise _fail(path, h.index, h.offset, f"checksum mismatch: header says {h.checksum:#010x}, payload has {crc:#010x}")
    try:
        data = _decompress(payload, h.compressor)
    except RecordIOError:
        raise
    except Exception as e:  # zlib.error, snappy's own errors
        raise _fail(path, h.index, h.offset, f"cannot decompress payload: {e}") from e
    try:
        return _records(data, h.records)
    except ValueError as e:
        raise _fail(path, h.index, h.offset, str(e)) from e


def read_chunk(path: str, offset: int, index: int = 0) -> List[bytes]:
    """Reads the records of the chunk whose header is at offset, checking
    all there is to check."""
    with open_file(path) as f:
        size = os.fstat(f.fileno()).st_size
        f.seek(offset)
        h = _header(f, path, index, offset, size)
        if h is None:
            raise _fail(path, index, offset, "truncated: no chunk header at this offset")
        return _payload_records(path, h, f.read(h.size))


def index(path: str) -> List[ChunkHeader]:
    """The headers of every chunk of the file, reading only the headers."""
    headers = []
    with open_file(path) as f:
        size = os.fstat(f.fileno()).st_size
        offset = 0
        while True:
            h = _header(f, path, len(headers), offset, size)
            if h is None:
                return headers
            headers.append(h)
            offset += HEADER.size + h.size
            f.seek(offset)


def scan(*paths: str) -> Iterator[bytes]:
    """Yields every record of the files, in order."""
    for path in paths:
        with open_file(path) as f:
            size = os.fstat(f.fileno()).st_size
            offset, i = 0, 0
            while True:
                h = _header(f, path, i, offset, size)
                if h is None:
                    break
                yield from _payload_records(path, h, f.read(h.size))
                offset += HEADER.size + h.size
                i += 1
