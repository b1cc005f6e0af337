"""Records per second of the Python client against a bare loop over the
same files with the same reader, and against go/client (cmd/trainer), for
uncompressed and snappy files. Run from the repository's root after
`make build`:

    /usr/bin/python3 python/bench.py [--files 4] [--records 50000] [--bin bin]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from trainmaster import Client, recordio  # noqa: E402


def write(bin_dir: Path, directory: Path, files: int, records: int, compressor: str) -> str:
    directory.mkdir(parents=True)
    for f in range(files):
        lines = "".join(f"{f:02d} {i:08d} {'x' * 86}\n" for i in range(records))  # 100 bytes a record
        subprocess.run([str(bin_dir / "recordio"), "write", "-o", str(directory / f"part-{f:02d}.recordio"),
                        "-compressor", compressor, "-max-chunk-bytes", str(1 << 20)], input=lines, text=True, check=True)
    return str(directory / "part-*.recordio")


def start_master(bin_dir: Path, data_dir: Path) -> tuple[subprocess.Popen, str]:
    p = subprocess.Popen([str(bin_dir / "master"), "-addr", "127.0.0.1:0", "-data-dir", str(data_dir), "-passes", "1",
                          "-chunks-per-task", "1"], stderr=subprocess.PIPE, text=True)
    assert p.stderr is not None
    for line in p.stderr:
        m = re.search(r'msg="leading: serving trainers" addr="?([^" ]+)', line)
        if m:
            return p, m.group(1)
    raise RuntimeError("the master did not serve")


def stop(p: subprocess.Popen) -> None:
    p.terminate()
    p.wait(10)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="bin")
    ap.add_argument("--files", type=int, default=4)
    ap.add_argument("--records", type=int, default=50000)
    args = ap.parse_args()
    bin_dir = Path(args.bin).resolve()
    print(f"{args.files} files x {args.records} records of 100 bytes; one pass; chunks of 1 MiB, one per task")
    print(f"{'compressor':>10} {'bare rec/s':>12} {'client rec/s':>13} {'ratio':>6} {'go/client rec/s':>16}")
    with tempfile.TemporaryDirectory() as tmp:
        for compressor in ("none", "snappy"):
            pattern = write(bin_dir, Path(tmp) / compressor, args.files, args.records, compressor)
            files = sorted(Path(pattern).parent.glob("part-*.recordio"))
            total = args.files * args.records

            start = time.perf_counter()
            n = sum(1 for _ in recordio.scan(*map(str, files)))
            bare = n / (time.perf_counter() - start)
            assert n == total

            p, addr = start_master(bin_dir, Path(tmp) / f"etcd-py-{compressor}")
            try:
                with Client(addr) as c:
                    c.report_dataset([pattern])
                    start = time.perf_counter()
                    n = sum(1 for _ in c.records())
                    py = n / (time.perf_counter() - start)
                assert n == total
            finally:
                stop(p)

            p, addr = start_master(bin_dir, Path(tmp) / f"etcd-go-{compressor}")
            try:
                with Client(addr) as c:
                    c.report_dataset([pattern])  # accepted before timing, as for the Python client
                start = time.perf_counter()
                # the whole process, which also digests every record
                subprocess.run([str(bin_dir / "trainer"), "-addr", addr], check=True, capture_output=True)
                go = total / (time.perf_counter() - start)
            finally:
                stop(p)
            print(f"{compressor:>10} {bare:>12,.0f} {py:>13,.0f} {py / bare:>6.2f} {go:>16,.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
