"""Synchronous data-parallel training (DDP, gloo, CPU) from the master.

Every rank is a trainer of a group: the master hands each rank a fixed
share of every pass, and trainmaster.torch.DataLoader forms exactly the
batches of the rank's plan, so that every rank runs the same number of
steps in every epoch (no join() needed), and every record of the pass is
trained once, by one rank. Each `for` over the loader is one pass. See
doc/pytorch.md. From the repository's root, with a master at
127.0.0.1:8080 and the points of the README's example:

    PYTHONPATH=python /usr/bin/python3 -m torch.distributed.run --standalone --nproc_per_node 2 -r 1 -t 1 \\
        python/examples/ddp.py --addr 127.0.0.1:8080 /tmp/ddp-points.recordio

(Debian's torch 1.13 needs -r 1 -t 1: see doc/pytorch.md), or by hand, a
process per rank:

    for r in 0 1; do
        RANK=$r WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 PYTHONPATH=python \\
            /usr/bin/python3 python/examples/ddp.py --addr 127.0.0.1:8080 /tmp/ddp-points.recordio &
    done; wait
"""

import argparse

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
    ap.add_argument("--addr", default="127.0.0.1:8080", help="the master's address")
    ap.add_argument("--epochs", type=int, default=3, help="passes to train (the master's -passes)")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--workers", type=int, default=2, help="DataLoader workers of each rank (they parse records)")
    ap.add_argument("files", nargs="+", help="the dataset's RecordIO files (glob patterns)")
    args = ap.parse_args()

    dist.init_process_group("gloo")  # RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT: torchrun's, or yours
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DistributedDataParallel(torch.nn.Linear(1, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.2)
    # The loader sees torch.distributed: this process is rank `rank` of the group.
    loader = DataLoader(TaskDataset(addr=args.addr, dataset=args.files, transform=parse),
                        batch_size=args.batch_size, num_workers=args.workers)
    for epoch in range(args.epochs):
        steps = 0
        for x, y in loader:  # one pass: the same number of batches on every rank
            loss = torch.nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            steps += 1
        plan = loader.plan
        if plan is None:
            print(f"rank {rank}: epoch {epoch}: every pass is done", flush=True)
            break
        print(f"rank {rank}: epoch {epoch} (pass {plan['pass']}): {steps} steps over its share of "
              f"{plan['share']} records, loss {loss.item():.4f}", flush=True)
    w, b = model.module.weight.item(), model.module.bias.item()
    print(f"rank {rank}: w {w:.2f}, b {b:.2f}", flush=True)
    loader.close()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
