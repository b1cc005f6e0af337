"""python -m trainmaster.run: torch's launcher (torchrun) with the master's
rendezvous registered as `--rdzv_backend trainmaster`; every other flag is
torchrun's, passed through:

    python -m trainmaster.run --nnodes 2:3 --nproc_per_node 1 --max_restarts 3 \\
        --rdzv_backend trainmaster --rdzv_endpoint 127.0.0.1:8080 --rdzv_id job-1 train.py

--rdzv_endpoint is the master's address, or etcd://host:port,... to find
the leading master through etcd; --rdzv_conf last_call=10,grace=15 shapes
the run (trainmaster.rendezvous).
"""

from __future__ import annotations

import logging
import os
import re
import sys
from typing import List, Optional

from torch.distributed import run as torchrun
from torch.distributed.elastic.multiprocessing import api as mp_api
from torch.distributed.elastic.rendezvous import rendezvous_handler_registry

from .rendezvous import BACKEND, create_handler

__all__ = ["main"]


def _std_from_str(cls, vm: str):
    """Std.from_str as torch documents it. torch 1.13's finds a value by
    iterating Std, and Python 3.11 no longer yields an IntFlag's zero member
    so, which makes "0" (its default for --redirects and --tee) None and the
    launcher fail (../shared/notes/pytorch-facts.md)."""
    if re.fullmatch(r"[0-3]", vm):
        return cls(int(vm))
    if re.fullmatch(r"(\d+:[0-3],)*\d+:[0-3]", vm):
        return {int(i): cls(int(v)) for i, v in (m.split(":") for m in vm.split(","))}
    raise ValueError(f"{vm} is neither a stream choice (0 to 3) nor local ranks' choices (0:1,1:2)")


def main(argv: Optional[List[str]] = None) -> None:
    # The rendezvous' own lines (trainmaster's logger) at the level torch's
    # elastic agent takes from LOGLEVEL (WARNING unless set).
    logging.basicConfig(level=os.environ.get("LOGLEVEL", "WARNING").upper(), format="%(asctime)s %(name)s: %(message)s")
    mp_api.Std.from_str = classmethod(_std_from_str)
    rendezvous_handler_registry.register(BACKEND, create_handler)
    torchrun.main(argv if argv is not None else sys.argv[1:])


if __name__ == "__main__":
    main()
