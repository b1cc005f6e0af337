"""A worker of the rendezvous tests: it joins the process group torchrun's
agents set up, then all-reduces once every 0.2 s for --steps steps,
printing its rank, its pid and its agent's, and its steps."""

import argparse
import os
import time

import torch
import torch.distributed as dist


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=1)
    args = ap.parse_args()
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    restart = os.environ.get("TORCHELASTIC_RESTART_COUNT")
    print(f"worker rank {rank} of {world}: pid {os.getpid()} agent {os.getppid()} restart {restart}", flush=True)
    for step in range(args.steps):
        t = torch.ones(1)
        dist.all_reduce(t)
        assert t.item() == world, (t.item(), world)
        time.sleep(0.2)
    print(f"worker rank {rank} of {world}: {args.steps} steps done, restart {restart}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
