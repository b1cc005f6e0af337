"""Data checkpoints with DDP (gloo, CPU) and the real masters: the data
position saved with the model, so that after a crash every record is
trained exactly once into the model that goes on.

A job of 3 ranks, each with trainmaster.torch.DataLoader and 2 DataLoader
workers, trains a linear regression for 2 epochs over 10,007 records in
tasks of about 1,000 (batch 32), saving model, optimizer and
loader.state_dict() every 40 steps (tests/ddp_checkpoint_rank.py). Two
masters share one etcd: the leader is killed with SIGKILL at step 15, and
the standby takes over. Rank 1 kills itself with SIGKILL: in the second
epoch between two checkpoints, or in the first at a checkpoint's step,
while the other ranks wait in theirs; the other ranks are killed at once,
as torchrun would. A job of 2 ranks then resumes from the last checkpoint
every rank completed (model, optimizer, loader.load_state_dict) and trains
to the end. What the first job trained up to that checkpoint's step and
everything the second trained hold every record exactly once in each
epoch; the second job's ranks run the same number of steps, each batch the
size of its plan (of the records left in the checkpoint's pass, then of
the whole next pass); the resumed model starts where the saved one was,
and learns the line. Then python/examples/ddp_checkpoint.py, run as the
README gives it: 3 ranks under torchrun crash at step 150, 2 resume from
the checkpoint of step 120."""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Dict, List

import pytest

from conftest import BIN, ROOT, assert_trained_once, json_lines, readme_master, write_points
from trainmaster import wire

RANK = Path(__file__).with_name("ddp_checkpoint_rank.py")
RECORDS, BATCH, EPOCHS, EVERY = 10_007, 32, 2, 40
# Every rank exits after this long, its stacks dumped: a hang fails fast.
RANK_TIMEOUT = 60


@pytest.fixture(scope="module")
def points(tmp_path_factory) -> str:
    """RECORDS records of the line write_points draws (seed 11); their glob
    pattern."""
    return write_points(tmp_path_factory.mktemp("points"), RECORDS, 11)


def start_job(procs, tmp_path: Path, job: int, ranks: int, args: List[str]):
    """Starts the ranks of a job, a process each, meeting through a file."""
    init = f"file://{tmp_path / f'init-{job}'}"
    return [procs(sys.executable, str(RANK), *args, "--job", str(job), "--init", init, "--timeout", str(RANK_TIMEOUT),
                  env={"RANK": str(r), "WORLD_SIZE": str(ranks), "OMP_NUM_THREADS": "1"})
            for r in range(ranks)]


def supervise(ranks) -> Dict[int, int]:
    """Waits for every rank to exit, as torchrun's agent does: once one
    exits other than 0, the others are killed with SIGKILL at once. Returns
    each rank's exit code (negative: the signal)."""
    exited: "queue.Queue[int]" = queue.Queue()
    for r, p in enumerate(ranks):
        threading.Thread(target=lambda r=r, p=p: (p.p.wait(), exited.put(r)), daemon=True).start()
    codes: Dict[int, int] = {}
    while len(codes) < len(ranks):
        try:
            r = exited.get(timeout=RANK_TIMEOUT + 20)  # each rank's own watchdog ends it before
        except queue.Empty:
            raise AssertionError("ranks still running: " + ", ".join(
                f"rank {r}:\n" + "".join(p.lines[-30:]) for r, p in enumerate(ranks) if r not in codes)) from None
        codes[r] = ranks[r].p.returncode
        if codes[r] != 0:
            for p in ranks:
                if p.p.poll() is None:
                    p.p.send_signal(signal.SIGKILL)
    return codes


def steps_of(out: Path, job: int, rank: int) -> List[dict]:
    """The lines a rank of a job wrote."""
    return json_lines(out / f"job{job}-rank{rank}.jsonl")


@pytest.mark.parametrize("death,last", [
    (["--die", "1:1:70"], 160),  # step 70 of epoch 1 (gstep 176): the last checkpoint, 160, is of epoch 1
    (["--die-at-checkpoint", "1:80"], 40),  # ranks 0 and 2 wait in the checkpoint of step 80, never complete
], ids=["between-checkpoints", "in-a-checkpoint"])
def test_a_job_killed_resumes_on_another_world_size_and_trains_every_record_once(tmp_path, master, procs, points,
                                                                                 death, last):
    flags = ["-passes", str(EPOCHS), "-chunks-per-task", "10"]
    leader, _ = master(*flags)
    standby, _ = master(*flags, wait=False)
    standby.wait_for(r"standing by")
    etcd_url = leader.args[leader.args.index("-endpoints") + 1]
    out = tmp_path / "out"
    out.mkdir()
    fifo = tmp_path / "go-on"
    os.mkfifo(fifo)
    common = ["--endpoints", etcd_url, "--data", points, "--out", str(out), "--epochs", str(EPOCHS), "--batch",
              str(BATCH), "--every", str(EVERY)]

    # Job 1: 3 ranks; the leader dies at step 15, rank 1 in epoch 1.
    first = start_job(procs, tmp_path, 1, 3, [*common, "--pause", "0:0:15", str(fifo), *death])
    first[0].wait_for(r"^PAUSED", timeout=RANK_TIMEOUT)
    leader.p.send_signal(signal.SIGKILL)
    leader.p.wait()
    with open(fifo, "w") as f:
        f.write("go on\n")
    standby.wait_for(r"leading: serving trainers", timeout=30)
    codes = supervise(first)
    assert codes[1] == -signal.SIGKILL, f"rank 1 exited {codes[1]}:\n" + "".join(first[1].lines[-40:])
    first[1].wait_for(r"killing myself with SIGKILL at (step 70 of epoch 1|the checkpoint of step 80)")
    assert codes[0] != 0 and codes[2] != 0  # killed

    # The last checkpoint every rank completed.
    done = [{int(p.name.split("-")[2]) for p in out.glob(f"ckpt-1-*-rank{r}.pt")} for r in range(3)]
    complete = set.intersection(*done)
    assert complete and max(complete) == last, f"checkpoints completed by each rank: {done}"
    assert not set.union(*done) - complete, f"a checkpoint completed by some ranks only: {done}"
    states = [next(line["state"] for line in steps_of(out, 1, r) if line.get("checkpoint") == last) for r in range(3)]
    assert states[0] == states[1] == states[2], states  # the same state on every rank
    resumed_pass = (last - 1) // wire.group_batches(RECORDS, 3, BATCH)
    assert states[0]["pass"] == resumed_pass and states[0]["ranks"] == 3 and states[0]["batch_size"] == BATCH

    # Job 2: 2 ranks resume from it and train to the end.
    second = start_job(procs, tmp_path, 2, 2, [*common, "--resume", str(out / f"ckpt-1-{last}-rank0.pt")])
    codes = supervise(second)
    assert codes == {0: 0, 1: 0}, "\n".join(f"rank {r} exited {codes[r]}:\n" + "".join(p.lines[-60:])
                                            for r, p in enumerate(second))
    log = "".join(leader.lines) + "".join(standby.lines)

    # The model that goes on: job 1 up to its checkpoint's step, then job 2.
    trained = {e: Counter() for e in range(EPOCHS)}
    for r in range(3):
        for line in steps_of(out, 1, r):
            if "ids" in line and line["gstep"] <= last:
                trained[line["epoch"]].update(line["ids"])
    resumed = [steps_of(out, 2, r) for r in range(2)]
    for lines in resumed:
        assert lines[1]["resumed"].endswith(f"ckpt-1-{last}-rank0.pt") and lines[1]["state"] == states[0]
        for line in lines:
            if "ids" in line:
                trained[line["epoch"]].update(line["ids"])
    rewound = [lines[1]["rewound"]["Rewound"] for lines in resumed]
    assert sorted(rewound) == [False, True], rewound  # one restart, rewound once
    assert_trained_once(trained, RECORDS, log[-4000:])

    # Job 2 trained the rest of the checkpoint's pass, shared by its 2
    # ranks (the plans of the records left), then the next passes whole:
    # the same number of steps on both ranks, every batch its plan's size.
    left = RECORDS - sum(len(line["ids"]) for r in range(3) for line in steps_of(out, 1, r)
                         if "ids" in line and line["epoch"] == resumed_pass and line["gstep"] <= last)
    ends = [json.loads((out / f"job2-rank{r}.json").read_text())["epochs"] for r in range(2)]
    for r in range(2):
        assert [e["pass"] for e in ends[r]] == list(range(resumed_pass, EPOCHS)), ends[r]
        for e in ends[r]:
            n = left if e["pass"] == resumed_pass else RECORDS
            share, k = wire.group_share(n, 2, r), wire.group_batches(n, 2, BATCH)
            assert e["plan"] == {"pass": e["pass"], "rank": r, "ranks": 2, "share": share, "batches": k,
                                 "batch_size": BATCH, "batch_sizes": wire.batch_sizes(share, k, BATCH)}, e["plan"]
            assert e["sizes"] == e["plan"]["batch_sizes"]
    assert "rewound to checkpoint" in log and f"{left} records to train" in log, log[-3000:]

    # The resumed model starts where the saved one was, and learns the line.
    first_losses = [line["loss"] for line in steps_of(out, 1, 0) if "ids" in line][:5]
    resumed_losses = [line["loss"] for line in resumed[0] if "ids" in line]
    assert sum(resumed_losses[:5]) / 5 < sum(first_losses) / 5 / 100, (first_losses, resumed_losses[:5])
    assert sum(resumed_losses[-5:]) / 5 < 0.001, resumed_losses[-5:]


def _readme_checkpoint_commands() -> List[str]:
    """The commands of the README's paragraph on checkpoints, in the DDP
    section: rm, the master, the dataset, the run that crashes, the run
    that resumes."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## Data-parallel PyTorch (DDP)", 1)[1].split("\n## ", 1)[0]
    paragraph = section.split("**Checkpoints.**", 1)[1]
    block = paragraph.split("\n\n    ", 1)[1].split("\n\n", 1)[0]
    return [line.strip() for line in ("    " + block).replace("\\\n", " ").splitlines()]


def test_the_readme_checkpoint_example_runs_as_given(tmp_path, master):
    rm, master_line, data, crash, resume = _readme_checkpoint_commands()
    assert rm.startswith("rm -rf ") and master_line.startswith("bin/master ") and "seq 0 9999" in data
    assert "--crash-at 150" in crash and "--nproc_per_node 3" in crash and "--nproc_per_node 2" in resume
    proc, addr = readme_master(master, master_line)

    def local(command: str) -> str:
        for old, new in {"127.0.0.1:8081": addr, "/tmp/": f"{tmp_path}/", "bin/recordio": f"{BIN}/recordio"}.items():
            command = command.replace(old, new)
        return command

    for command in (rm, data):
        subprocess.run(["sh", "-c", local(command)], cwd=ROOT, check=True, timeout=30)
    crashed = subprocess.run(["sh", "-c", local(crash)], cwd=ROOT, capture_output=True, text=True,
                             timeout=RANK_TIMEOUT + 30)
    assert crashed.returncode != 0 and "ChildFailedError" in crashed.stderr, (
        crashed.stdout[-2000:] + crashed.stderr[-3000:])
    assert "Signal 9 (SIGKILL)" in crashed.stderr, crashed.stderr[-3000:]
    resumed = subprocess.run(["sh", "-c", local(resume)], cwd=ROOT, capture_output=True, text=True,
                             timeout=RANK_TIMEOUT + 30)
    out = resumed.stdout
    assert resumed.returncode == 0, out[-3000:] + resumed.stderr[-3000:]

    # Both ranks resumed from the last checkpoint before step 150: step 120,
    # in pass 1 (pass 0 is 105 steps of 3 ranks); the master rewound once.
    records, k = 10_000, wire.group_batches(10_000, 3, 32)
    starts = re.findall(r"rank (\d): resumed from step (\d+) \(checkpoint (\d+)\) in epoch (\d+), 2 ranks", out)
    assert sorted(starts) == [("0", "120", starts[0][2], "1"), ("1", "120", starts[0][2], "1")], out
    assert len(re.findall("rewound to checkpoint", "".join(proc.lines))) == 1
    # They shared the records left of pass 1, in the same number of steps.
    left = records - (120 - k) * 3 * 32
    epochs = re.findall(r"rank (\d): epoch 1 \(pass 1\): (\d+) steps over its share of (\d+) records", out)
    assert sorted((r, int(n)) for r, _, n in epochs) == [("0", wire.group_share(left, 2, 0)),
                                                          ("1", wire.group_share(left, 2, 1))], out
    assert len({steps for _, steps, _ in epochs}) == 1
    for r in range(2):
        assert f"rank {r}: w 3.00, b 1.00" in out, out
    # What the README shows of it.
    readme = (ROOT / "README.md").read_text()
    assert f"resumed from step 120 (checkpoint {starts[0][2]}) in epoch 1, 2 ranks" in readme
    assert f"{epochs[0][1]} steps over its share of {wire.group_share(left, 2, 0)} records" in readme
