"""python -m trainmaster: RecordIO files, and a reference trainer.

    python -m trainmaster stat FILE...
    python -m trainmaster cat FILE...          # one record a line, as Python bytes literals
    python -m trainmaster train (--addr HOST:PORT | --endpoints URL,...) [--namespace NS]
                                [--dataset 'PATTERN,...'] [--dataset-name NAME] [--name NAME]
                                [--token-file FILE] [--json]
                                [--record-delay SECONDS] [--progress-interval SECONDS]

train prints, for each pass, the records and bytes it consumed and their
digest, as cmd/trainer does (the digests of several trainers add up to the
dataset's): "pass 0: 1000 records, 24000 bytes, digest 3fa2c1d09e6b7a55".
A task counts once its last record is consumed; a task dropped before it
(another trainer has it) does not. With --json it prints, as cmd/trainer
-json does, a line for each task consumed, {"pass", "task", "from",
"records", "bytes", "digest"} ("from": the position of its first record
consumed, past 0 for a task resumed or a piece of one), then one for each
pass, {"pass", "records", "bytes", "digest"}.
--dataset reports the RecordIO files of the dataset train first;
--dataset-name trains another dataset of the job than train (declared by the
master's -datasets file or by a trainer), as cmd/trainer -dataset-name does:
a record of an index-range dataset has no data, and counts in the digests as
its index, 8 bytes little-endian, so that the digests of Go and Python
trainers of one pass add up.
--name is the name it gives the master, for its per-trainer figures
(default "hostname-pid-xxxx"); --record-delay pretends to train, sleeping that
long on every record (for demos); --progress-interval is how often it
reports how far it got in its task (default: as often as each task asks, 1
to 10 seconds; 0: never).
"""

from __future__ import annotations

import argparse
import json
import struct
import sys
import time
from typing import Dict, List, Optional, Tuple

from . import Client, Digest, EtcdResolver, recordio
from .wire import DEFAULT_DATASET


def _counted(data: Optional[bytes], index: Optional[int]) -> bytes:
    """What the digests count of a record (cmd/trainer's recordBytes): its
    data, or the index of a record of an index-range dataset (no data), 8
    bytes little-endian."""
    if data is None:
        return struct.pack("<Q", (index or 0) % (1 << 64))
    return data


def _stat(files: List[str]) -> int:
    for path in files:
        chunks = recordio.index(path)
        records = sum(h.records for h in chunks)
        print(f"{path}: {len(chunks)} chunks, {records} records")
    return 0


def _cat(files: List[str]) -> int:
    for record in recordio.scan(*files):
        print(repr(record))
    return 0


def _train(args: argparse.Namespace) -> int:
    token: Optional[str] = None
    if args.token_file:
        with open(args.token_file) as f:
            token = f.read().strip()
    resolver = args.addr if args.addr else EtcdResolver(args.endpoints.split(","), args.namespace)
    digests: Dict[int, Digest] = {}
    task = Digest()  # of the records of the current dispatch so far
    start = 0  # the position of its first record
    # The pass, task and next position of the records in task: a record
    # that does not follow them begins a dispatch (as cmd/trainer finds it).
    current: Optional[Tuple[int, int, int]] = None
    with Client(resolver, token=token, min_backoff=0.02, max_backoff=0.5, name=args.name,
                progress_interval=args.progress_interval, dataset=args.dataset_name or DEFAULT_DATASET) as c:
        if args.dataset:
            c.report_dataset(args.dataset.split(","))
        for rec in c.records():
            if args.record_delay > 0:
                time.sleep(args.record_delay)
            if current != (rec.pass_, rec.task, rec.position):
                # The first record of a dispatch. The one before ended with
                # its last record, or was dropped (another trainer has it):
                # its records so far are no consumption of the task.
                task, start = Digest(), rec.position
            task.add(_counted(rec.data, rec.index))
            current = (rec.pass_, rec.task, rec.position + 1)
            if rec.last:
                digests.setdefault(rec.pass_, Digest()).combine(task)
                if args.json:
                    print(json.dumps({"pass": rec.pass_, "task": rec.task, "from": start, "records": task.records,
                                      "bytes": task.bytes, "digest": str(task)}), flush=True)
                task, current = Digest(), None  # what follows, even a piece of this task, is a dispatch of its own
    for p in sorted(digests):
        d = digests[p]
        if args.json:
            print(json.dumps({"pass": p, "records": d.records, "bytes": d.bytes, "digest": str(d)}))
        else:
            print(f"pass {p}: {d.records} records, {d.bytes} bytes, digest {d}")
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m trainmaster", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("stat", help="chunks and records of RecordIO files").add_argument("files", nargs="+")
    sub.add_parser("cat", help="every record of RecordIO files").add_argument("files", nargs="+")
    train = sub.add_parser("train", help="consume the dataset from the master and print per-pass digests")
    where = train.add_mutually_exclusive_group(required=True)
    where.add_argument("--addr", help="the master's address, HOST:PORT")
    where.add_argument("--endpoints", help="etcd URLs, comma-separated: the master's address is read there")
    train.add_argument("--namespace", default="", help="the job's etcd key prefix")
    train.add_argument("--dataset", help="comma-separated RecordIO glob patterns to report first")
    train.add_argument("--dataset-name", default=DEFAULT_DATASET, metavar="NAME",
                       help="train the dataset of this name (default train); a record of an index-range dataset "
                            "counts in the digests as its index, 8 bytes little-endian")
    train.add_argument("--name", help="the trainer's name the master shows (default hostname-pid-xxxx)")
    train.add_argument("--progress-interval", type=float, default=None, metavar="SECONDS",
                       help="report how far the trainer got in its task this often (default: as often as each "
                            "task asks, 1 to 10; 0: never)")
    train.add_argument("--token-file", help="file holding the master's token")
    train.add_argument("--json", action="store_true", help="print JSON lines, one per task and per pass")
    train.add_argument("--record-delay", type=float, default=0.0, metavar="SECONDS",
                       help="pretend to train: sleep this long on every record (demos)")
    args = parser.parse_args(argv)
    try:
        if args.command == "stat":
            return _stat(args.files)
        if args.command == "cat":
            return _cat(args.files)
        return _train(args)
    except (recordio.RecordIOError, OSError) as e:
        print(f"trainmaster: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 1


if __name__ == "__main__":
    sys.exit(main())
