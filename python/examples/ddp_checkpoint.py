"""Synchronous data-parallel training (DDP, gloo, CPU) that survives a crash.

Every 40 steps every rank takes a data checkpoint (loader.state_dict(): a
barrier at the master), and rank 0 saves it with the model and the
optimizer in one torch.save file, CHECKPOINTS/latest.pt (written aside,
then renamed: the file there is always whole); a run that finds no such
file takes one at step 0. A run started when that file exists resumes
from it: rank 0 reads it and hands it to every rank, which restore the
model, the optimizer, and the master taken back to the checkpoint
(loader.load_state_dict), on whatever number of ranks the run has; the
first epoch then trains the rest of the checkpoint's pass, and every
record is trained exactly once in each pass into the model that goes on.
See doc/pytorch.md, Checkpoints. With --crash-at N, rank 1 kills itself
with SIGKILL at step N of the job's first run (torchrun then stops the
other ranks).

Under `python -m trainmaster.run`, torchrun's agents meeting at the
master, the agents restart the workers themselves after a crash, or when
a node dies or joins, and the workers resume the same way (README.md,
Elastic); CHECKPOINTS is then a directory every node reaches.

From the repository's root, with a master at 127.0.0.1:8081 (README.md,
Data-parallel PyTorch: checkpoints): 3 ranks crash at step 150, 2 resume:

    PYTHONPATH=python /usr/bin/python3 -m torch.distributed.run --standalone --nproc_per_node 3 -r 1 -t 1 \\
        python/examples/ddp_checkpoint.py --addr 127.0.0.1:8081 --checkpoints /tmp/ddp-ckpt --crash-at 150 \\
        /tmp/ckpt-points.recordio
    PYTHONPATH=python /usr/bin/python3 -m torch.distributed.run --standalone --nproc_per_node 2 -r 1 -t 1 \\
        python/examples/ddp_checkpoint.py --addr 127.0.0.1:8081 --checkpoints /tmp/ddp-ckpt /tmp/ckpt-points.recordio
"""

import argparse
import os
import signal
from pathlib import Path

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from trainmaster.torch import DataLoader, TaskDataset


def parse(record: bytes):
    """A record "x y": a point of the line to learn."""
    x, y = map(float, record.split())
    return torch.tensor([x]), torch.tensor([y])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--addr", default="127.0.0.1:8081", help="the master's address")
    ap.add_argument("--checkpoints", required=True, help="the directory of latest.pt")
    ap.add_argument("--every", type=int, default=40, help="take a checkpoint every this many steps")
    ap.add_argument("--epochs", type=int, default=2, help="passes to train (the master's -passes)")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--workers", type=int, default=2, help="DataLoader workers of each rank (they parse records)")
    ap.add_argument("--crash-at", type=int, default=0,
                    help="rank 1 kills itself with SIGKILL at this step of the job's first run")
    ap.add_argument("files", nargs="+", help="the dataset's RecordIO files (glob patterns)")
    args = ap.parse_args()

    dist.init_process_group("gloo")  # RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT: torchrun's, or yours
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = DistributedDataParallel(torch.nn.Linear(1, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.2)
    loader = DataLoader(TaskDataset(addr=args.addr, dataset=args.files, transform=parse),
                        batch_size=args.batch_size, num_workers=args.workers)
    latest = Path(args.checkpoints) / "latest.pt"

    def save(state, step):  # rank 0 writes it aside, then renames it: the file there is always whole
        if rank == 0:
            latest.parent.mkdir(parents=True, exist_ok=True)
            torch.save({"model": model.module.state_dict(), "optimizer": opt.state_dict(), "loader": state,
                        "step": step}, latest.with_suffix(".tmp"))
            os.replace(latest.with_suffix(".tmp"), latest)

    # Rank 0 reads the last checkpoint and hands it to every rank: they
    # agree on whether this run resumes, and only rank 0 needs the file.
    shared = [torch.load(latest) if rank == 0 and latest.exists() else None]
    dist.broadcast_object_list(shared, src=0)
    saved, first, step = shared[0], 0, 0
    if saved is not None:  # a restart: the model, the optimizer, and the data position, on every rank
        model.module.load_state_dict(saved["model"])
        opt.load_state_dict(saved["optimizer"])
        loader.load_state_dict(saved["loader"])  # the master goes back to the checkpoint (once for all ranks)
        first, step = saved["loader"]["pass"], saved["step"]
        print(f"rank {rank}: resumed from step {step} (checkpoint {saved['loader']['checkpoint']}) in epoch {first}, "
              f"{world} ranks", flush=True)
    else:  # the first run: a checkpoint of nothing trained yet, for a crash before the next one to go back to
        save(loader.state_dict(), 0)
    crash = args.crash_at if os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") == "0" and rank == 1 else None

    for epoch in range(first, args.epochs):
        steps = 0
        for x, y in loader:  # one pass (after a restart: the rest of the checkpoint's)
            if step + 1 == crash:
                os.kill(os.getpid(), signal.SIGKILL)  # a crash
            loss = torch.nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
            steps += 1
            if step % args.every == 0:
                save(loader.state_dict(), step)  # every rank, at the same step, after its optimizer step
        plan = loader.plan
        if plan is None:
            print(f"rank {rank}: epoch {epoch}: nothing left of pass {loader.pass_}", flush=True)
            continue
        print(f"rank {rank}: epoch {epoch} (pass {plan['pass']}): {steps} steps over its share of {plan['share']} "
              f"records, loss {loss.item():.4f}", flush=True)
    w, b = model.module.weight.item(), model.module.bias.item()
    print(f"rank {rank}: w {w:.2f}, b {b:.2f}", flush=True)
    loader.close()
    dist.barrier()
    del model, opt
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
