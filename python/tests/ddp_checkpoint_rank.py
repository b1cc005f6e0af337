"""One rank of test_ddp_checkpoint.py's jobs: a linear regression wrapped in
DistributedDataParallel (gloo, CPU) trains from trainmaster.torch.DataLoader
and saves a checkpoint every --every steps: the model, the optimizer and
loader.state_dict() in one torch.save file per rank,
OUT/ckpt-<job>-<gstep>-rank<R>.pt (written to a temporary file, then renamed:
a file there is whole).

Every step appends a JSON line to OUT/job<J>-rank<R>.jsonl (flushed at once:
a rank may be killed at any time): its epoch, step, global step (gstep,
counted over the epochs and across a restart), the record ids of its batch
and the loss; every checkpoint a line with its gstep and the loader's
state. With --resume FILE the rank loads the model, the optimizer and the
loader's state from FILE before its first `for` (loader.load_state_dict:
the master goes back to that checkpoint), and goes on from its epoch and
gstep. At the end the rank writes OUT/job<J>-rank<R>.json: per epoch its
pass, plan and batch sizes.

Launched by hand: RANK and WORLD_SIZE set, --init file://... Or, with
--elastic DIR, by torchrun's agents (test_elastic.py): the job is then a
name drawn by rank 0 at each start of the workers, rank 0 also keeps its
checkpoints as DIR/latest.pt, and a start resumes from that file when
there is one (rank 0 reads it and hands it to every rank), else takes a
checkpoint at step 0; each rank's first line names its job, world size,
pid and agent's pid, and each step's line its time. --step-delay sleeps
after each step, so that a job lasts long enough for a test to act in it.
Hangs fail fast: every stack is dumped and the process exits after --timeout seconds.
Faults on demand: --pause R:E:S FIFO has rank R print PAUSED at that step
and wait until a line is written into FIFO (the test kills the leading
master meanwhile); --die R:E:S has rank R SIGKILL itself at that step,
before its forward pass, and --die-at-checkpoint R:G after its optimizer
step of gstep G, in place of the checkpoint it would take there (the other
ranks then wait in theirs); the test then kills the other ranks, as
torchrun would."""

from __future__ import annotations

import argparse
import datetime
import faulthandler
import json
import logging
import os
import secrets
import shutil
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402

from trainmaster.torch import DataLoader, TaskDataset  # noqa: E402

from ddp_common import at, parse  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--endpoints", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--job", help="the job's number (launched by hand)")
    ap.add_argument("--init", help="init_method (file://...; launched by hand)")
    ap.add_argument("--elastic", metavar="DIR", help="launched by torchrun's agents: the directory of latest.pt")
    ap.add_argument("--step-delay", type=float, default=0.0, help="seconds to sleep after each step")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--every", type=int, default=40, help="checkpoint every this many steps")
    ap.add_argument("--resume", help="a checkpoint file to resume from")
    ap.add_argument("--pause", nargs=2, metavar=("R:E:S", "FIFO"))
    ap.add_argument("--die", default="")
    ap.add_argument("--die-at-checkpoint", default="")
    ap.add_argument("--timeout", type=float, default=60)
    args = ap.parse_args()
    faulthandler.dump_traceback_later(args.timeout, exit=True)

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format=f"rank {rank}: %(levelname)s %(message)s")
    timeout = datetime.timedelta(seconds=60)
    if args.elastic:
        dist.init_process_group("gloo", timeout=timeout)
    else:
        dist.init_process_group("gloo", init_method=args.init, rank=rank, world_size=world, timeout=timeout)
    torch.manual_seed(0)
    model = DistributedDataParallel(torch.nn.Linear(2, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(TaskDataset(endpoints=[args.endpoints], dataset=[args.data], transform=parse),
                        batch_size=args.batch, num_workers=args.workers)
    out = Path(args.out)
    job, saved = args.job, torch.load(args.resume) if args.resume else None
    if args.elastic:
        latest = Path(args.elastic) / "latest.pt"
        shared = [secrets.token_hex(4), torch.load(latest) if latest.exists() else None] if rank == 0 else [None, None]
        dist.broadcast_object_list(shared, src=0)
        job, saved = shared
    steps = open(out / f"job{job}-rank{rank}.jsonl", "a", buffering=1)
    steps.write(json.dumps({"job": job, "world": world, "pid": os.getpid(), "agent": os.getppid(),
                            "t": time.time()}) + "\n")

    def checkpoint(gstep: int) -> None:
        state = loader.state_dict()  # every rank, at the same step: a barrier at the master
        tmp = out / f".ckpt-{job}-{gstep}-rank{rank}.pt"
        torch.save({"model": model.module.state_dict(), "opt": opt.state_dict(), "loader": state, "gstep": gstep,
                    "job": job}, tmp)
        if args.elastic and rank == 0:
            shutil.copyfile(tmp, latest.with_suffix(".tmp"))
            os.replace(latest.with_suffix(".tmp"), latest)
        os.replace(tmp, out / f"ckpt-{job}-{gstep}-rank{rank}.pt")
        steps.write(json.dumps({"checkpoint": gstep, "state": state}) + "\n")

    start, gstep = 0, 0
    if saved is not None:
        model.module.load_state_dict(saved["model"])
        opt.load_state_dict(saved["opt"])
        loader.load_state_dict(saved["loader"])
        start, gstep = saved["loader"]["pass"], saved["gstep"]
        steps.write(json.dumps({"resumed": args.resume or str(latest), "from": {"job": saved["job"], "gstep": gstep},
                                "state": saved["loader"], "rewound": loader.rewound}) + "\n")
    elif args.elastic:
        checkpoint(0)
    pause, die = at(args.pause[0], rank) if args.pause else None, at(args.die, rank)
    r, _, g = args.die_at_checkpoint.partition(":")
    die_at = int(g) if r and int(r) == rank else None

    epochs = []
    for epoch in range(start, args.epochs):
        sizes = []
        for step, (ids, x, y) in enumerate(loader):
            if (epoch, step) == pause:
                print("PAUSED", flush=True)
                with open(args.pause[1]) as fifo:
                    fifo.readline()
            if (epoch, step) == die:
                logging.info("killing myself with SIGKILL at step %d of epoch %d", step, epoch)
                os.kill(os.getpid(), signal.SIGKILL)
            loss = torch.nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            gstep += 1
            sizes.append(len(ids))
            steps.write(json.dumps({"epoch": epoch, "pass": loader.pass_, "step": step, "gstep": gstep,
                                    "ids": ids.tolist(), "loss": loss.item(), "t": time.time()}) + "\n")
            time.sleep(args.step_delay)
            if gstep == die_at:
                logging.info("killing myself with SIGKILL at the checkpoint of step %d", gstep)
                os.kill(os.getpid(), signal.SIGKILL)
            if gstep % args.every == 0:
                checkpoint(gstep)
        epochs.append({"epoch": epoch, "pass": loader.pass_, "plan": loader.plan, "sizes": sizes})
    loader.close()
    (out / f"job{job}-rank{rank}.json").write_text(json.dumps({"rank": rank, "world": world, "epochs": epochs}))
    # As tests/ddp_rank.py: the model (its DDP reducer holds the process
    # group) goes first, while every rank is still there, then the group.
    dist.barrier()
    del model, opt
    dist.destroy_process_group()
    faulthandler.dump_traceback_later(15, exit=True)


if __name__ == "__main__":
    main()
