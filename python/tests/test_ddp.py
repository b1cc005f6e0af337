"""Synchronous data-parallel PyTorch (DDP, gloo, CPU) from the real master:
3 ranks, each with trainmaster.torch.DataLoader and 2 DataLoader workers,
train a linear regression for 2 epochs (passes) over 10,007 records in
tasks of about 1,000 (tests/ddp_rank.py); each rank writes what it trained.
In every epoch every record is trained exactly once across the ranks,
every rank runs the same number of steps, every batch has exactly the size
of its rank's plan (none empty), and the loss goes down: launched by
torchrun with a plain loop (no join()), by hand with model.join(), with a
rank's DataLoader worker killed, and with the leading master killed in the
middle of a pass. Then a task failed for good (its rank ends short, and
says so), the loader without a group, the group's refusals, torch's private
API the loader relies on, and the README's example as the README gives
it."""

from __future__ import annotations

import glob
import json
import logging
import os
import re
import signal
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import List

import pytest
import torch

from conftest import BIN, ROOT, binary, readme_master, write_dataset, write_points
from trainmaster import BadGroup, Client, PassTooSmall, recordio, wire

RANK = Path(__file__).with_name("ddp_rank.py")
RECORDS, RANKS, BATCH, EPOCHS = 10_007, 3, 32, 2
# Every rank exits after this long, its stacks dumped: a hang fails fast.
RANK_TIMEOUT = 60


@pytest.fixture(scope="module")
def points(tmp_path_factory) -> str:
    """RECORDS records of the line write_points draws (seed 7); their glob
    pattern."""
    return write_points(tmp_path_factory.mktemp("points"), RECORDS, 7)


def master_flags() -> List[str]:
    return ["-passes", str(EPOCHS), "-chunks-per-task", "10"]


def rank_args(points: str, out: Path, *more: str) -> List[str]:
    out.mkdir(exist_ok=True)
    return [str(RANK), "--data", points, "--out", str(out), "--epochs", str(EPOCHS), "--batch", str(BATCH),
            "--timeout", str(RANK_TIMEOUT), *more]


def by_hand(procs, tmp_path: Path, args: List[str]):
    """Starts the RANKS ranks, a process each, meeting through a file."""
    init = f"file://{tmp_path / 'init'}"
    return [procs(sys.executable, *args, "--init", init, env={"RANK": str(r), "WORLD_SIZE": str(RANKS),
                                                               "OMP_NUM_THREADS": "1"})
            for r in range(RANKS)]


def wait_all(ranks) -> None:
    """Waits for every rank to exit 0 (each exits by itself after
    RANK_TIMEOUT, its stacks dumped, if it hangs)."""
    for r, p in enumerate(ranks):
        try:
            code = p.p.wait(RANK_TIMEOUT + 20)
        except subprocess.TimeoutExpired:
            code = None
        assert code == 0, f"rank {r} exited {code}:\n" + "".join(p.lines[-60:])


def check_trained(out: Path, master_log: str = "") -> List[dict]:
    """The assertions of every DDP run, on what the ranks wrote."""
    ranks = [json.loads((out / f"rank{r}.json").read_text()) for r in range(RANKS)]
    k = wire.group_batches(RECORDS, RANKS, BATCH)
    for epoch in range(EPOCHS):
        seen = Counter()
        for r, got in enumerate(ranks):
            e = got["epochs"][epoch]
            share = wire.group_share(RECORDS, RANKS, r)
            want = wire.batch_sizes(share, k, BATCH)
            assert e["pass"] == epoch, f"rank {r}, epoch {epoch}: pass {e['pass']}"
            assert e["plan"] == {"pass": epoch, "rank": r, "ranks": RANKS, "share": share, "batches": k,
                                 "batch_size": BATCH, "batch_sizes": want}, f"rank {r}, epoch {epoch}"
            assert e["sizes"] == want, f"rank {r}, epoch {epoch}: batch sizes {e['sizes']}, the plan's {want}"
            assert [len(ids) for ids in e["ids"]] == e["sizes"] and min(e["sizes"]) > 0
            for ids in e["ids"]:
                seen.update(ids)
        twice = sorted(i for i, n in seen.items() if n > 1)
        missing = sorted(set(range(RECORDS)) - set(seen))
        assert not twice and not missing and len(seen) == RECORDS, (
            f"epoch {epoch}: {len(twice)} records trained twice ({twice[:10]}), {len(missing)} never "
            f"({missing[:10]})\n{master_log[-3000:]}")
        assert len({len(got["epochs"][epoch]["sizes"]) for got in ranks}) == 1  # the same steps on every rank
    for r, got in enumerate(ranks):
        losses = [loss for e in got["epochs"] for loss in e["losses"]]
        first, last = sum(losses[:5]) / 5, sum(losses[-5:]) / 5
        assert last < first / 100, f"rank {r}: loss {first:.4f} at the start, {last:.6f} at the end"
    return ranks


def test_torchrun_plain_loop_without_join(tmp_path, master, points):
    """(a) Launched by torchrun; the loop has no join(): equal batch counts
    are what keeps it from hanging."""
    proc, addr = master(*master_flags())
    out = tmp_path / "out"
    run = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node",
                          str(RANKS), "-r", "1", "-t", "1", "--log_dir", str(tmp_path / "logs"),
                          *rank_args(points, out, "--addr", addr)],
                         capture_output=True, text=True, timeout=RANK_TIMEOUT + 30, cwd=tmp_path)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-5000:]
    check_trained(out, "".join(proc.lines))


def test_by_hand_with_join(tmp_path, master, procs, points):
    """(b) Launched by hand (RANK, WORLD_SIZE, a file:// rendezvous), the
    loop inside model.join()."""
    proc, addr = master(*master_flags())
    out = tmp_path / "out"
    wait_all(by_hand(procs, tmp_path, rank_args(points, out, "--addr", addr, "--join")))
    check_trained(out, "".join(proc.lines))


def test_a_dataloader_worker_killed(tmp_path, master, procs, points):
    """(c) Rank 1 kills one of its own DataLoader workers with SIGKILL at
    step 20 of epoch 0: a pause, a warning, nothing lost or trained twice."""
    proc, addr = master(*master_flags())
    out = tmp_path / "out"
    ranks = by_hand(procs, tmp_path, rank_args(points, out, "--addr", addr, "--kill-worker", "1:0:20"))
    killed = int(ranks[1].wait_for(r"killing my DataLoader worker (\d+) with SIGKILL at step 20 of epoch 0",
                                   timeout=RANK_TIMEOUT).group(1))
    ranks[1].wait_for(rf"WARNING trainmaster: DataLoader worker\(s\) {killed} died in pass 0; starting new workers "
                      r"and replaying the \d+ batch\(es\) they had taken and not delivered: none is lost or "
                      r"delivered twice", timeout=RANK_TIMEOUT)
    wait_all(ranks)
    check_trained(out, "".join(proc.lines))
    assert "died in pass" not in "".join(ranks[0].lines) + "".join(ranks[2].lines)


def test_the_leading_master_killed_mid_pass(tmp_path, master, procs, points):
    """(d) Two masters on one etcd; rank 0 stops at step 30 of epoch 0
    while the test kills the leader with SIGKILL, then goes on: the
    standby takes over the pass, and the ranks follow it."""
    leader, _ = master(*master_flags())
    standby, _ = master(*master_flags(), wait=False)
    standby.wait_for(r"standing by")
    etcd_url = leader.args[leader.args.index("-endpoints") + 1]
    fifo = tmp_path / "go-on"
    os.mkfifo(fifo)
    out = tmp_path / "out"
    ranks = by_hand(procs, tmp_path, rank_args(points, out, "--endpoints", etcd_url, "--pause", "0:0:30", str(fifo)))
    ranks[0].wait_for(r"^PAUSED", timeout=RANK_TIMEOUT)
    leader.p.send_signal(signal.SIGKILL)
    leader.p.wait()
    with open(fifo, "w") as f:
        f.write("go on\n")
    standby.wait_for(r"leading: serving trainers", timeout=30)
    wait_all(ranks)
    check_trained(out, "".join(leader.lines) + "".join(standby.lines))
    # The standby took over in the middle of pass 0, and finished it.
    taken = standby.wait_for(r"leading: serving trainers").string
    after = "".join(standby.lines[standby.lines.index(taken):])
    assert "pass 0 finished" in after, after[-3000:]


def test_the_loader_without_a_group_trains_each_pass_once_through_a_killed_worker(master, caplog):
    """Outside torch.distributed the main process trains each pass alone:
    batches of batch_size, the last smaller; a worker killed costs a pause."""
    from trainmaster.torch import DataLoader, TaskDataset

    n, per_task = 3_000, 100
    proc, addr = master()
    with Client(addr, dataset="eval") as c:
        c.declare(records=n, records_per_task=per_task, passes=2)
    loader = DataLoader(TaskDataset(addr=addr, dataset_name="eval"), batch_size=64, num_workers=2)
    assert loader.group is None
    for epoch in range(2):
        seen, sizes = Counter(), []
        with caplog.at_level("WARNING", logger="trainmaster"):
            for step, batch in enumerate(loader):
                if epoch == 0 and step == 10:
                    os.kill(loader.worker_pids[1], signal.SIGKILL)
                seen.update(batch.tolist())
                sizes.append(len(batch))
        assert set(seen) == set(range(n)) and set(seen.values()) == {1}, f"epoch {epoch}"
        assert sizes == [64] * (n // 64) + [n % 64] and loader.pass_ == epoch and loader.plan is None
    assert "died in pass 0; starting new workers and replaying" in caplog.text
    assert list(loader) == []
    loader.close()


def test_a_pass_too_small_or_a_bad_group_is_refused(master):
    proc, addr = master()
    with Client(addr, dataset="tiny") as c:
        c.declare(records=2, records_per_task=1, passes=1)
        with pytest.raises(PassTooSmall, match="pass too small for the group: 2 records in the pass, 3 ranks"):
            list(c.batches(4, group=(0, 3)))
    with Client(addr, dataset="eval") as c:
        c.declare(records=100, records_per_task=10, passes=1)
        first = c.batches(4, group=(0, 2))
        assert len(next(first)) == 4
        with Client(addr, dataset="eval") as other:
            with pytest.raises(BadGroup, match="bad group"):
                list(other.batches(8, group=(1, 2)))  # another batch size than the group's
        first.close()


def test_a_task_failed_for_good_leaves_its_rank_short(tmp_path, master, caplog):
    """A block damaged after the dataset was accepted: its task fails until
    the master discards it; the rank it was handed to ends the pass short
    by its records, and says so; the other rank trains its whole plan."""
    pattern = write_dataset(tmp_path / "data", 1, 400)
    proc, addr = master("-passes", "1", "-chunks-per-task", "2", "-task-timeout-max", "1")
    with Client(addr) as c:
        c.report_dataset([pattern])
    path = glob.glob(pattern)[0]
    chunks = recordio.index(path)
    damaged = chunks[3]
    with open(path, "r+b") as f:
        f.seek(damaged.offset + recordio.HEADER.size + 2)
        f.write(b"\xff\xff")
    lost = chunks[2].records + chunks[3].records  # the task of chunks 2 and 3
    got, plans, errors = {}, {}, []

    def rank(r):
        try:
            with Client(addr, name=f"rank{r}", min_backoff=0.01, max_backoff=0.2) as c:
                b = c.batches(16, group=(r, 2))
                got[r], plans[r] = list(b), b.plan
        except BaseException as e:
            errors.append(e)

    with caplog.at_level(logging.ERROR, logger="trainmaster"):
        threads = [threading.Thread(target=rank, args=(r,)) for r in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    assert not errors and len(got) == 2, errors
    proc.wait_for(r"failed too often; discarded for this pass")
    handed = {r: sum(map(len, got[r])) for r in got}
    short = [r for r in got if handed[r] < plans[r]["share"]]
    assert short and sum(plans[r]["share"] - handed[r] for r in short) == lost, handed
    said = sorted(r.getMessage() for r in caplog.records if "records of the rank's share" in r.getMessage())
    assert said == sorted(
        f"trainmaster: rank {r} of 2, pass 0: the master handed {handed[r]} records of the rank's share of "
        f"{plans[r]['share']} ({len(got[r])} of its {plans[r]['batches']} batches formed); a task of it failed for "
        "good or was taken back? Ending the pass short: this rank runs fewer steps than the others (a DDP loop "
        "without join() then waits for it)" for r in short)
    for r in got:
        sizes = [len(b) for b in got[r]]
        if r in short:  # the plan's batches, the last cut short
            assert sizes[:-1] == plans[r]["batch_sizes"][:len(sizes) - 1] and 0 < sizes[-1], sizes
        else:
            assert sizes == plans[r]["batch_sizes"]
    seen = Counter(record for r in got for batch in got[r] for record in batch)
    assert len(seen) == 400 - lost and set(seen.values()) == {1}


def test_the_loader_refuses_what_it_forms_itself():
    from trainmaster.torch import DataLoader, TaskDataset

    data = TaskDataset(addr="127.0.0.1:1")
    for arg in ("sampler", "batch_sampler", "shuffle", "drop_last"):
        with pytest.raises(TypeError, match="forms the batches itself"):
            DataLoader(data, 32, **{arg: None})


class _Records(torch.utils.data.Dataset):
    def __getitem__(self, i):
        return i


def test_torchs_sigchld_handler_is_off_for_the_loaders_workers():
    """The loader keeps torch's SIGCHLD handler off for its workers, through
    torch's private signal_handling and _MultiProcessingDataLoaderIter: a
    torch that moves them fails here (and trainmaster.torch refuses it)."""
    from torch.utils.data._utils import signal_handling

    from trainmaster.torch import _check_torch, _Loader

    _check_torch()
    plain = iter(torch.utils.data.DataLoader(_Records(), batch_sampler=[[1, 2], [3]], num_workers=2))
    assert plain._worker_pids_set is True  # torch registers its workers for its handler ...
    ours = iter(_Loader(_Records(), batch_sampler=[[1, 2], [3]], num_workers=2))
    assert ours._worker_pids_set is False  # ... the loader's iterator does not
    with pytest.raises(ValueError, match="Cannot find worker information"):
        signal_handling._remove_worker_pids(id(ours))
    assert [b.tolist() for b in ours] == [[1, 2], [3]]
    assert [b.tolist() for b in plain] == [[1, 2], [3]]


def _readme_commands():
    """The commands of the README's section on DDP: the master's flags,
    the dataset's command and the torchrun command."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## Data-parallel PyTorch (DDP)", 1)[1].split("\n## ", 1)[0]
    lines, block = [], section.split("\n\n    ", 1)[1].split("\n\n", 1)[0]
    for line in ("    " + block).replace("\\\n", " ").splitlines():
        lines.append(line.strip())
    master = next(line for line in lines if line.startswith("bin/master "))
    data = next(line for line in lines if "bin/recordio write" in line)
    run = next(line for line in lines if "torch.distributed.run" in line)
    return master, data, run


def test_the_readme_example_runs_as_given(tmp_path, master):
    master_line, data, run = _readme_commands()
    proc, addr = readme_master(master, master_line)
    local = {"127.0.0.1:8080": addr, "/tmp/": f"{tmp_path}/"}
    for old, new in local.items():
        data, run = data.replace(old, new), run.replace(old, new)
    data = data.replace("bin/recordio", f"{BIN}/recordio")
    subprocess.run(["sh", "-c", data], cwd=ROOT, check=True, timeout=30)
    done = subprocess.run(["sh", "-c", run], cwd=ROOT, capture_output=True, text=True, timeout=RANK_TIMEOUT + 30)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    for r in range(2):
        assert f"rank {r}: w 3.00, b 1.00" in done.stdout, done.stdout
        steps = re.findall(rf"rank {r}: epoch (\d) \(pass (\d)\): (\d+) steps over its share of (\d+) records",
                           done.stdout)
        assert [(e, p) for e, p, _, _ in steps] == [(str(i), str(i)) for i in range(3)], done.stdout
    assert len(set(re.findall(r"(\d+) steps", done.stdout))) == 1, done.stdout  # the same on both ranks
