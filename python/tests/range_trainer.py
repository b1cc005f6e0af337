"""A Python trainer of an index-range dataset, run as a process of its own by
test_datasets.py: it declares the dataset, trains every record the master
hands it, and counts each index it is given in a bytearray per pass (one
byte an index: 10 MB for 10M records, where a set of ints would take
hundreds), written to OUT.PASS when the loop ends. It prints one JSON line:
{"indexes": {pass: n}, "tasks": n, "seconds": s, "misplaced": n}, misplaced
counting the records whose index is not Start + position (it trains
without a seed).

    range_trainer.py ADDR DATASET RECORDS RECORDS_PER_TASK PASSES OUT NAME
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from trainmaster import Client  # noqa: E402


def main() -> int:
    addr, dataset, records, per_task, passes, out, name = sys.argv[1:8]
    n, per = int(records), int(per_task)
    started = time.monotonic()
    counts = {}
    seen = bytearray()
    current = None
    tasks = misplaced = 0
    with Client(addr, dataset=dataset, name=name, min_backoff=0.01, max_backoff=0.1) as c:
        c.declare(records=n, records_per_task=per, passes=int(passes))
        for r in c.records():
            if r.pass_ != current:
                current = r.pass_
                seen = counts.setdefault(current, bytearray(n))
            seen[r.index] += 1
            if r.last:
                tasks += 1
                # The task's last record, in file order: Start + its position.
                misplaced += r.index != r.task * per + r.position
    for p, seen in counts.items():
        Path(f"{out}.{p}").write_bytes(seen)
    print(json.dumps({"indexes": {str(p): n - seen.count(0) for p, seen in counts.items()}, "tasks": tasks,
                      "seconds": round(time.monotonic() - started, 2), "misplaced": misplaced}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
