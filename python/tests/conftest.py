"""Fixtures that run the real binaries on loopback: etcd (cmd/etcd-embed),
masters (cmd/master) and Go trainers (cmd/trainer). The binaries are taken
from $TRAINMASTER_BIN (the Makefile builds them into bin/)."""

from __future__ import annotations

import json
import os
import random
import shlex
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from collections import Counter
from typing import Any, Callable, Dict, List, Optional

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))

BIN = Path(os.environ.get("TRAINMASTER_BIN", ROOT / "bin"))
FIXTURES = ROOT / "go" / "recordio" / "testdata"


def binary(name: str) -> str:
    path = BIN / name
    if not path.exists():
        pytest.fail(f"{path} is missing: run `make build` (or set TRAINMASTER_BIN)")
    return str(path)


class Proc:
    """A process whose stderr the test follows line by line."""

    def __init__(self, args: List[str], env: Optional[dict] = None) -> None:
        self.args = args
        self.p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                  env={**os.environ, **(env or {})})
        self.lines: List[str] = []
        self._cond = threading.Condition()
        threading.Thread(target=self._follow, daemon=True).start()

    def _follow(self) -> None:
        assert self.p.stdout is not None
        for line in self.p.stdout:
            with self._cond:
                self.lines.append(line)
                self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    def wait_for(self, pattern: str, timeout: float = 30.0, start: int = 0) -> re.Match:
        """The first match of pattern in a line from line start on."""
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        with self._cond:
            i = start
            while True:
                while i < len(self.lines):
                    m = rx.search(self.lines[i])
                    if m:
                        return m
                    i += 1
                left = deadline - time.monotonic()
                if left <= 0 or (self.p.poll() is not None and i >= len(self.lines)):
                    raise AssertionError(f"no {pattern!r} from {self.args[0]}; its output:\n" + "".join(self.lines[-40:]))
                self._cond.wait(min(left, 0.2))

    def stop(self) -> None:
        if self.p.poll() is None:
            self.p.terminate()
            try:
                self.p.wait(10)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()


def json_lines(path: Path) -> List[dict]:
    """The JSON lines a process appended to path (one killed may have left
    its last line cut: it is dropped)."""
    lines = []
    for line in path.read_text().splitlines():
        try:
            lines.append(json.loads(line))
        except json.JSONDecodeError:
            pass
    return lines


def wait_until(what: str, check: Callable[[], Any], timeout: float) -> Any:
    """check()'s first true value, asked every 0.1 s; fails naming what it
    waited for after timeout seconds."""
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} within {timeout:g} s")
        time.sleep(0.1)


def assert_trained_once(trained: Dict[int, Counter], records: int, context: str) -> None:
    """Every record of 0 to records counted exactly once in each epoch of
    trained (epoch: record id: times trained)."""
    for epoch, seen in trained.items():
        twice = sorted(i for i, n in seen.items() if n > 1)
        missing = sorted(set(range(records)) - set(seen))
        assert not twice and not missing and len(seen) == records, (
            f"epoch {epoch}: {len(twice)} records trained twice ({twice[:10]}), {len(missing)} never "
            f"({missing[:10]})\n{context}")


@pytest.fixture
def procs():
    started: List[Proc] = []

    def start(*args: str, env: Optional[dict] = None) -> Proc:
        p = Proc(list(args), env)
        started.append(p)
        return p

    yield start
    for p in reversed(started):
        if p.p.poll() is None:
            p.p.kill()
            p.p.wait()


@pytest.fixture
def etcd(procs, tmp_path) -> str:
    """A one-member etcd on loopback; its client URL."""
    p = procs(binary("etcd-embed"), "-data-dir", str(tmp_path / "etcd"), "-listen-client", "127.0.0.1:0",
              "-listen-peer", "127.0.0.1:0", "-unsafe-no-fsync")
    return p.wait_for(r"^ready (\S+)").group(1)


SERVING = r'msg="leading: serving trainers" addr="?([^" ]+)'


@pytest.fixture
def master(procs, etcd):
    """Starts a master on the test's etcd; returns (proc, address) once it serves."""

    def start(*args: str, wait: bool = True):
        p = procs(binary("master"), "-addr", "127.0.0.1:0", "-endpoints", etcd, "-ttl", "2",
                  "-log-level", "debug", *args)
        return p, (p.wait_for(SERVING).group(1) if wait else None)

    return start


def readme_master(master, line: str):
    """Starts a master with the flags of a README's `bin/master ... &` line,
    less -addr and -data-dir (the test's own); returns (proc, address)."""
    flags = shlex.split(line.rstrip("&"))[1:]
    for flag in ("-addr", "-data-dir"):
        i = flags.index(flag)
        del flags[i:i + 2]
    return master(*flags)


def write_dataset(directory: Path, files: int, records: int, compressor: str = "none", prefix: str = "part") -> str:
    """Writes files of records "<prefix> F record N" with cmd/recordio, in
    chunks of about 10 records; returns the glob pattern."""
    directory.mkdir(parents=True, exist_ok=True)
    for f in range(files):
        lines = "".join(f"{prefix} {f:02d} record {i:05d}\n" for i in range(records))
        subprocess.run([binary("recordio"), "write", "-o", str(directory / f"{prefix}-{f:02d}.recordio"),
                        "-compressor", compressor, "-max-chunk-bytes", "200"],
                       input=lines, text=True, check=True)
    return str(directory / f"{prefix}-*.recordio")


def write_points(d: Path, records: int, seed: int) -> str:
    """Writes records (more than 5,000) records "id x1 x2 y" of y = 2 x1 -
    3 x2 + 0.5 + noise (drawn from seed) into two RecordIO files under d,
    the first of 5,000, in chunks of about 100 records, and returns their
    glob pattern: the DDP tests' dataset."""
    rng = random.Random(seed)
    for f, (lo, hi) in enumerate([(0, 5_000), (5_000, records)]):
        lines = []
        for i in range(lo, hi):
            x1, x2 = rng.uniform(-1, 1), rng.uniform(-1, 1)
            lines.append(f"{i} {x1:.5f} {x2:.5f} {2 * x1 - 3 * x2 + 0.5 + rng.gauss(0, 0.01):.5f}\n")
        subprocess.run([binary("recordio"), "write", "-o", str(d / f"part-{f}.recordio"), "-compressor", "none",
                        "-max-chunk-bytes", "2500"], input="".join(lines), text=True, check=True)
    return str(d / "part-*.recordio")
