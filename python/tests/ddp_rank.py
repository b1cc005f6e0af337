"""One rank of test_ddp.py's DDP runs: a linear regression wrapped in
DistributedDataParallel (gloo, CPU) trains from trainmaster.torch.DataLoader
for a few epochs and writes what it trained to OUT/rank<R>.json: per epoch
the pass, the plan, the batch sizes, the record ids of every batch and the
losses.

Launched by torchrun (RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT set; no
--init) or by hand (RANK and WORLD_SIZE set, --init file://...). Hangs fail
fast: every stack is dumped and the process exits after --timeout seconds.
Faults on demand: --kill-worker R:E:S SIGKILLs one of rank R's own DataLoader
workers at step S of epoch E; --pause R:E:S FIFO has rank R print PAUSED at
that step and wait until a line is written into FIFO (the test kills the
master meanwhile)."""

from __future__ import annotations

import argparse
import datetime
import faulthandler
import json
import logging
import os
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402

from trainmaster.torch import DataLoader, TaskDataset  # noqa: E402

from ddp_common import at, parse  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--addr")
    ap.add_argument("--endpoints")
    ap.add_argument("--data", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--init", help="init_method (file://...); default env:// (torchrun)")
    ap.add_argument("--join", action="store_true", help="train inside model.join()")
    ap.add_argument("--kill-worker", default="")
    ap.add_argument("--pause", nargs=2, metavar=("R:E:S", "FIFO"))
    ap.add_argument("--timeout", type=float, default=60)
    args = ap.parse_args()
    faulthandler.dump_traceback_later(args.timeout, exit=True)

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format=f"rank {rank}: %(levelname)s %(message)s")
    timeout = datetime.timedelta(seconds=60)
    if args.init:
        dist.init_process_group("gloo", init_method=args.init, rank=rank, world_size=world, timeout=timeout)
    else:
        dist.init_process_group("gloo", timeout=timeout)

    torch.manual_seed(0)
    model = DistributedDataParallel(torch.nn.Linear(2, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    where = {"addr": args.addr} if args.addr else {"endpoints": [args.endpoints]}
    data = TaskDataset(**where, dataset=[args.data], transform=parse)
    loader = DataLoader(data, batch_size=args.batch, num_workers=args.workers)
    kill, pause = at(args.kill_worker, rank), at(args.pause[0], rank) if args.pause else None

    epochs = []
    for epoch in range(args.epochs):
        trained = {"ids": [], "sizes": [], "losses": []}
        with model.join(enable=args.join):
            for step, (ids, x, y) in enumerate(loader):
                if (epoch, step) == kill:
                    pid = loader.worker_pids[0]
                    logging.info("killing my DataLoader worker %d with SIGKILL at step %d of epoch %d", pid, step,
                                 epoch)
                    os.kill(pid, signal.SIGKILL)
                if (epoch, step) == pause:
                    print("PAUSED", flush=True)
                    with open(args.pause[1]) as fifo:
                        fifo.readline()
                loss = torch.nn.functional.mse_loss(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                trained["ids"].append(ids.tolist())
                trained["sizes"].append(len(ids))
                trained["losses"].append(loss.item())
        epochs.append({"pass": loader.pass_, "plan": loader.plan, **trained})
    loader.close()
    Path(args.out, f"rank{rank}.json").write_text(json.dumps({"rank": rank, "world": world, "epochs": epochs}))
    # The model (its DDP reducer holds the process group) goes first, while
    # every rank is still there, then the group: torch 1.13's gloo may
    # otherwise hang in a destructor as the process exits.
    dist.barrier()
    del model, opt
    dist.destroy_process_group()
    # Exiting may hang too (a thread, a child, a C++ destructor): the
    # watchdog stays armed until the process is gone.
    faulthandler.dump_traceback_later(15, exit=True)


if __name__ == "__main__":
    main()
