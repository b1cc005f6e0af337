"""Data checkpoints of one process, against the real master: a trainer
takes a checkpoint in the middle of a task, trains on past it, and is
killed (or stops); a new trainer rewinds to the checkpoint and trains the
rest. What the first trained up to the checkpoint and everything the
second trained hold every record exactly once in each pass: with a
records() loop reading ahead (killed with SIGKILL), with batches, and with
trainmaster.torch.DataLoader outside any group, its checkpoint taken in
the last batches of a pass, while its workers hold the pass's last
batches. Then Master.Rewind from two processes at once rewinds once, the
checkpoint errors the master answers come as the contract's exceptions,
and a checkpoint one rank of two takes alone is refused incomplete."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess
import sys
from collections import Counter

import pytest

from conftest import ROOT, write_dataset
from trainmaster import BadCheckpoint, CheckpointIncomplete, Client, UnknownCheckpoint

# A trainer that prints every record it is handed, as a JSON line, takes a
# checkpoint at record CHECKPOINT (printing its ID), and SIGKILLs itself
# at record KILL.
TRAINER = r"""
import json, os, signal, sys
from trainmaster import Client
addr, pattern, checkpoint, kill = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
c = Client(addr, prefetch=2, name="first")
c.report_dataset([pattern])
for n, rec in enumerate(c.records(), 1):
    print(json.dumps({"pass": rec.pass_, "record": rec.data.decode()}), flush=True)
    if n == checkpoint:
        print(json.dumps({"checkpoint": c.checkpoint(f"record-{n}")}), flush=True)
    if n == kill:
        os.kill(os.getpid(), signal.SIGKILL)
"""


def once_per_pass(trained: Counter, records: set, passes: int) -> None:
    """Every record trained exactly once in each pass: trained counts
    (pass, record)."""
    for p in range(passes):
        seen = {r: n for (q, r), n in trained.items() if q == p}
        twice = sorted(r for r, n in seen.items() if n > 1)
        missing = sorted(records - set(seen))
        assert not twice and not missing, f"pass {p}: trained twice {twice[:10]}, never {missing[:10]}"
    assert {q for q, _ in trained} == set(range(passes))


def test_a_records_loop_killed_after_a_checkpoint_mid_task_resumes_exactly_once(tmp_path, master):
    pattern = write_dataset(tmp_path / "data", 2, 100)  # 200 records in chunks of about 9
    proc, addr = master("-passes", "2", "-chunks-per-task", "3")
    records = {f"part {f:02d} record {i:05d}" for f in range(2) for i in range(100)}
    first = subprocess.run([sys.executable, "-c", TRAINER, addr, pattern, "50", "260"], capture_output=True,
                           text=True, timeout=60, cwd=ROOT / "python")
    assert first.returncode == -signal.SIGKILL, first.stderr
    lines = [json.loads(line) for line in first.stdout.splitlines()]
    at = next(i for i, line in enumerate(lines) if "checkpoint" in line)
    assert at == 50 and len(lines) == 261, (at, len(lines))
    cp = lines[at]["checkpoint"]
    assert cp["ID"] >= 1 and cp["Kept"][-1] == cp["ID"]
    # The model saved at the checkpoint: the first 50 records (read ahead
    # beyond them, trained beyond them: none of that counts).
    model = Counter((line["pass"], line["record"]) for line in lines[:at])
    assert {p for p, _ in model} == {0}
    proc.wait_for(r'checkpoint \d+ \\"record-50\\" stored: '
                  r'train pass 0: 50 records trained \(\d+ tasks whole, 1 in part\)')

    with Client(addr, name="second") as c:
        assert c.rewind(cp["ID"], "restart-1") == {"Rewound": True, "Datasets": ["train"]}
        for rec in c.records():
            model[(rec.pass_, rec.data.decode())] += 1
    once_per_pass(model, records, 2)
    proc.wait_for(r"rewound to checkpoint \d+, restart restart-1: "
                  r"pass 0 again from what it held trained \(50 records\), 150 records to train")


def test_batches_stopped_after_a_checkpoint_resume_exactly_once(tmp_path, master):
    """A loop of batches takes a checkpoint while it holds a batch (trained
    then), trains on into the next pass and stops: its finishes and its
    last progress report after the checkpoint are undone by the rewind."""
    proc, addr = master()
    n = 1_000
    with Client(addr, dataset="points") as c:
        c.declare(records=n, records_per_task=64, passes=2)
    model, since = Counter(), []
    with Client(addr, dataset="points", name="first", prefetch=2) as c:
        for p in range(2):
            for step, batch in enumerate(c.batches(24)):
                since += [(p, i) for i in batch]
                if (p, step) == (0, 20):  # 504 records: in the middle of task 7
                    cp = c.checkpoint("step-20")
                    model.update(since)
                    since = []
                if (p, step) == (1, 5):
                    break
    assert sum(model.values()) == 21 * 24
    with Client(addr, dataset="points", name="second") as c:
        assert c.rewind(cp["ID"], "restart-1")["Rewound"]
        for p in range(2):
            for batch in c.batches(24):
                model.update((p, i) for i in batch)
        assert list(c.batches(24)) == []
    once_per_pass(model, set(range(n)), 2)


def test_the_loader_outside_a_group_resumes_exactly_once_from_the_end_of_a_pass(tmp_path, master):
    """trainmaster.torch.DataLoader alone (Trainers 1), 2 workers holding
    up to 4 batches formed ahead: its checkpoint is taken 3 batches before
    the end of pass 0, when the master has handed out every task of the
    pass and the workers hold its last batches; the loader trains on into
    pass 1 and stops; a new loader resumes from the checkpoint: the rest of
    pass 0 (its last 3 batches), then pass 1."""
    from trainmaster.torch import DataLoader, TaskDataset

    proc, addr = master()
    n, batch = 1_000, 10
    with Client(addr, dataset="eval") as c:
        c.declare(records=n, records_per_task=100, passes=2)
    data = TaskDataset(addr=addr, dataset_name="eval")
    loader = DataLoader(data, batch_size=batch, num_workers=2, prefetch_factor=2)
    model, since = Counter(), []
    for p in range(2):
        for step, b in enumerate(loader):
            since += [(p, i) for i in b.tolist()]
            if (p, step) == (0, 96):
                state = loader.state_dict()
                model.update(since)
                since = []
            if (p, step) == (1, 30):
                break
    loader.close()
    assert state["pass"] == 0 and state["ranks"] == 1 and state["dataset"] == "eval", state
    assert sum(model.values()) == 97 * batch

    resumed = DataLoader(TaskDataset(addr=addr, dataset_name="eval"), batch_size=batch, num_workers=2)
    resumed.load_state_dict(state)
    assert resumed.rewound == {"Rewound": True, "Datasets": ["eval"]}
    sizes = []
    for p in range(2):
        got = [b.tolist() for b in resumed]
        sizes.append(len(got))
        model.update((p, i) for b in got for i in b)
    assert sizes == [3, n // batch]
    assert list(resumed) == []
    resumed.close()
    once_per_pass(model, set(range(n)), 2)


def _rewind(addr, checkpoint_id, restart, barrier, answers):
    with Client(addr, name=f"rank-{os.getpid()}") as c:
        barrier.wait(30)
        answers.put(c.rewind(checkpoint_id, restart))


def test_a_rewind_from_two_processes_at_once_rewinds_once(master):
    proc, addr = master("-checkpoint-wait", "1s")
    with Client(addr, dataset="eval") as c:
        c.declare(records=300, records_per_task=30, passes=1)
        it = c.records()
        for _ in range(45):
            next(it)
        cp = c.checkpoint("step-45")
        it.close()
    ctx = multiprocessing.get_context("fork")
    barrier, answers = ctx.Barrier(2), ctx.Queue()
    ps = [ctx.Process(target=_rewind, args=(addr, cp["ID"], "restart-7", barrier, answers)) for _ in range(2)]
    for p in ps:
        p.start()
    got = [answers.get(timeout=30) for _ in ps]
    for p in ps:
        p.join(30)
        assert p.exitcode == 0
    assert sorted(a["Rewound"] for a in got) == [False, True], got
    assert all(a["Datasets"] == ["eval"] for a in got)
    assert len([line for line in proc.lines if "rewound to checkpoint" in line]) == 1

    with Client(addr, dataset="eval") as c:
        # The same restart again: done; another restart: rewinds again.
        assert c.rewind(cp["ID"], "restart-7")["Rewound"] is False
        assert c.rewind(cp["ID"], "restart-8")["Rewound"] is True
        # The master's refusals, as the contract's exceptions.
        with pytest.raises(UnknownCheckpoint, match=rf"unknown checkpoint: .*kept: {cp['ID']}"):
            c.rewind(cp["ID"] + 100, "restart-9")
        with pytest.raises(CheckpointIncomplete, match=r"checkpoint incomplete: 1 of the 2 trainers"):
            c.checkpoint("alone", trainers=2)
        with pytest.raises(BadCheckpoint):
            c.checkpoint("x" * 129)
        # What it rewound to: 45 records trained, 255 left, once.
        seen = Counter(rec.index for rec in c.records())
        assert len(seen) == 255 and set(seen.values()) == {1}


def test_a_checkpoint_a_rank_takes_alone_is_refused_incomplete(master):
    """state_dict on one rank of two (the habit of `if rank == 0:`): the
    master waits -checkpoint-wait for the other, then refuses it on the one
    that came; nothing is stored. A group given by hand without
    torch.distributed names its checkpoints with restart=, or is told to."""
    from trainmaster.torch import DataLoader, TaskDataset

    proc, addr = master("-checkpoint-wait", "1s")
    with Client(addr, dataset="eval") as c:
        c.declare(records=400, records_per_task=40, passes=1)
    loader = DataLoader(TaskDataset(addr=addr, dataset_name="eval"), batch_size=8, group=(0, 2), restart="job-a")
    for step, b in enumerate(loader):
        if step == 3:
            with pytest.raises(CheckpointIncomplete, match=r'1 of the 2 trainers of checkpoint "job-a-1" reported'):
                loader.state_dict()
            break
    loader.close()
    assert not [line for line in proc.lines if "stored:" in line]
    unnamed = DataLoader(TaskDataset(addr=addr, dataset_name="eval"), batch_size=8, group=(1, 2))
    with pytest.raises(RuntimeError, match="give the loader restart="):
        unnamed.state_dict()
    unnamed.close()
