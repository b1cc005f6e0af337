"""The reader against the reference fixtures and cmd/recordio's files."""

from __future__ import annotations

import hashlib
import os
import struct
import subprocess

import pytest

from conftest import FIXTURES, binary, write_dataset
from trainmaster import recordio


def manifest():
    for line in (FIXTURES / "MANIFEST").read_text().splitlines():
        name, records, chunks, sha = line.split()
        yield name, int(records), int(chunks), sha


@pytest.mark.parametrize("name,records,chunks,sha", list(manifest()))
def test_reference_fixtures(name, records, chunks, sha):
    path = str(FIXTURES / name)
    h = hashlib.sha256()
    got = list(recordio.scan(path))
    for r in got:
        h.update(struct.pack("<I", len(r)) + r)
    assert len(got) == records
    assert len(recordio.index(path)) == chunks
    assert h.hexdigest() == sha


@pytest.mark.parametrize("compressor", ["none", "snappy", "gzip"])
def test_files_of_cmd_recordio(tmp_path, compressor):
    pattern = write_dataset(tmp_path, 1, 500, compressor)
    path = pattern.replace("*", "00")
    want = [f"part 00 record {i:05d}".encode() for i in range(500)]
    assert list(recordio.scan(path)) == want
    headers = recordio.index(path)
    assert len(headers) > 10 and {h.compressor for h in headers} == {["none", "snappy", "gzip"].index(compressor)}
    second = headers[1]
    assert recordio.read_chunk(path, second.offset, 1) == want[headers[0].records: headers[0].records + second.records]


def test_errors_name_file_chunk_and_offset(tmp_path):
    path = write_dataset(tmp_path, 1, 100).replace("*", "00")
    third = recordio.index(path)[2]
    with open(path, "r+b") as f:
        f.seek(third.offset + recordio.HEADER.size + 3)
        byte = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(recordio.RecordIOError, match=rf"recordio: {path}: chunk 2 at offset {third.offset}: checksum mismatch"):
        list(recordio.scan(path))
    with pytest.raises(recordio.RecordIOError, match=r"chunk 0 at offset 0: bad magic: not a RecordIO file"):
        list(recordio.scan(str(binary("master"))))


def test_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "pipe.recordio"
    os.mkfifo(fifo)
    with pytest.raises(recordio.RecordIOError, match="is a named pipe"):
        list(recordio.scan(str(fifo)))


def test_command_line(tmp_path):
    path = write_dataset(tmp_path, 1, 30, "gzip").replace("*", "00")
    out = subprocess.run(["/usr/bin/python3", "-m", "trainmaster", "stat", path], capture_output=True, text=True,
                         cwd=FIXTURES.parents[2] / "python", check=True).stdout
    assert out.startswith(f"{path}: ") and out.rstrip().endswith(" chunks, 30 records")
