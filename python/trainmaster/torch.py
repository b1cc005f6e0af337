"""PyTorch over the master's tasks, one pass per iteration: `for epoch in
range(passes): for batch in loader:` trains pass `epoch` in each epoch.
Two loaders (doc/pytorch.md compares them): TaskDataset, an
IterableDataset under torch's own DataLoader, each worker a trainer of its
own; and DataLoader, whose main process is the trainer (one per rank of a
DDP group), forming the batches itself, its workers only transforming and
collating records: the loader for synchronous data-parallel training,
whose state_dict() and load_state_dict() save the data position with the
model and go back to it after a crash (doc/pytorch.md, Checkpoints).

With a DataLoader and num_workers > 1, each worker process is a trainer of
its own (its own connection, its own tasks): the master hands each task of a
pass to one of them, so no record is yielded twice in a pass, unless a task
was taken back from a worker that stalled or died. A task counts as
consumed once a worker has read it (see Client.records(finish_when_read)):
the records a worker holds when it dies are not handed out again in that
pass, as a DataLoader's batched records would not be either.

    loader = DataLoader(TaskDataset(addr="127.0.0.1:8080", dataset=["/data/*.recordio"],
                                    transform=decode), batch_size=32, num_workers=2)

dataset_name trains another dataset of the job than train. Of an
index-range dataset (declared with Client.declare(records=...,
records_per_task=...), or the master's -datasets file) the master hands out
record indexes, not data: transform then receives each record's index and
reads the record from the trainer's own storage (trainmaster.Files maps an
index to a file and a record in it)::

    loader = DataLoader(TaskDataset(addr="127.0.0.1:8080", dataset_name="eval",
                                    transform=lambda i: load_example(i)), batch_size=32, num_workers=2)
"""

from __future__ import annotations

import collections
import logging
import multiprocessing
import multiprocessing.connection
import re
import secrets
from typing import Any, Callable, Deque, Dict, Iterator, List, Optional, Sequence, Tuple, Union

import torch.distributed
import torch.utils.data
import torch.utils.data.dataloader
from torch.utils.data._utils import signal_handling

from .batches import Batches
from .client import DEFAULT_DATASET, Client
from .discovery import EtcdResolver
from .wire import trainer_name

__all__ = ["TaskDataset", "DataLoader"]

log = logging.getLogger("trainmaster")


class TaskDataset(torch.utils.data.IterableDataset):
    """Yields transform(record) for every record of one pass the master
    hands this process: each iteration over it (each `for batch in
    loader:`) is one pass, the first pass 0, the next pass 1, and so on
    (Client.records(per_pass=True)); an iteration begun once all passes
    are done yields nothing. An iteration trains the pass current at the
    master when it begins, and ends when the master moves past it: with a
    DataLoader's workers, each a trainer, a worker that finds no task waits
    until the others' tasks of the pass are done, so that the epoch ends
    when the pass does. per_pass=False yields every pass in one iteration,
    until all are done.

    The workers of a DataLoader agree on the pass of an iteration through
    numbers they share (a multiprocessing.Array made with the dataset):
    the pass current at the master when the dataset is first iterated,
    then one more after each iteration that reached its pass's end; so a
    worker started late, after the others finished a short pass, yields
    nothing of the next. The workers of one iteration know each other by
    the DataLoader's base seed of the iteration (get_worker_info) and how
    many times the process iterated the dataset (persistent workers). A
    dataset made again (a new process) starts at the pass current then: so
    after StartRound, make the dataset anew to train the new round. The
    shared numbers reach the workers by inheritance, which needs the
    DataLoader's default start method on Linux, fork. The master is at addr, or found
    through etcd at endpoints; dataset, if given (glob patterns of RecordIO
    files), is reported first as the dataset train. name is the trainer's
    name the master shows, default "hostname-pid-xxxx": each DataLoader
    worker, a process of its own, is then a trainer of its own name (a name
    given is shared by the workers).

    dataset_name is the dataset of the job it trains (default "train"):
    another one must be declared (Client.declare, or the master's -datasets
    file). For a dataset of RecordIO files transform receives each record's
    bytes; for an index-range dataset, whose records carry no data,
    transform receives each record's index (an int in [0, records)) and
    reads the record from the user's storage. Without transform the bytes,
    or the index, are yielded as they are."""

    def __init__(self, *, addr: Optional[str] = None, endpoints: Optional[Sequence[str]] = None, namespace: str = "",
                 dataset: Optional[Sequence[str]] = None, token: Optional[str] = None,
                 transform: Optional[Callable[[Union[bytes, int]], Any]] = None, prefetch: int = 1,
                 name: Optional[str] = None, dataset_name: str = DEFAULT_DATASET, per_pass: bool = True) -> None:
        super().__init__()
        if (addr is None) == (endpoints is None):
            raise ValueError("give either addr or endpoints")
        self.addr, self.endpoints, self.namespace = addr, list(endpoints or []), namespace
        self.dataset = list(dataset) if dataset else None
        self.token, self.transform, self.prefetch, self.name = token, transform, prefetch, name
        if not isinstance(dataset_name, str):
            raise TypeError(f"dataset_name is a dataset's name, not {type(dataset_name).__name__} "
                            "(the files of train are dataset=)")
        self.dataset_name = dataset_name or DEFAULT_DATASET
        self.per_pass = per_pass
        # Shared by the workers (_pass_to_train): the iteration last begun
        # (base seed, count), its pass, and the pass of the next; -1: none.
        self._passes = multiprocessing.Array("q", [-1, -1, -1, -1])
        self._iterations = 0  # of this process

    def __iter__(self) -> Iterator[Any]:
        # Runs in each DataLoader worker: a client made here is that worker's.
        resolver = self.addr if self.addr is not None else EtcdResolver(self.endpoints, self.namespace)
        with Client(resolver, token=self.token, prefetch=self.prefetch, name=self.name,
                    dataset=self.dataset_name) as c:
            if self.dataset:
                c.report_dataset(self.dataset)
            # The main process asks the workers for batches in turn: a worker
            # waiting to be asked must not hold a task the other waits for
            # ("no task available" at the end of a pass) while the main
            # process waits for that other one. Tasks are finished once read.
            # A record of an index-range dataset has no data: its index
            # stands for it.
            of_pass = self._pass_to_train(c) if self.per_pass else None
            for rec in c.records(finish_when_read=True, per_pass=self.per_pass, of_pass=of_pass):
                item = rec.index if rec.data is None else rec.data
                yield self.transform(item) if self.transform else item
            if of_pass is not None:
                with self._passes.get_lock():
                    self._passes[_NEXT] = max(self._passes[_NEXT], of_pass + 1)

    def _pass_to_train(self, c: Client) -> int:
        """The pass this iteration trains: the one its first worker chose,
        which is the pass after the one the last iteration ended, or, at
        the first, the master's current pass."""
        info = torch.utils.data.get_worker_info()
        seed = (info.seed - info.id) & _SEED_MASK if info is not None else 0
        self._iterations += 1
        with self._passes.get_lock():
            shared = self._passes
            if (shared[_SEED], shared[_COUNT]) == (seed, self._iterations):
                return shared[_PASS]  # a sibling began this iteration
            p = shared[_NEXT] if shared[_NEXT] >= 0 else c.dataset_status().get("Pass", 0)
            shared[_SEED], shared[_COUNT], shared[_PASS] = seed, self._iterations, p
            return p


# The places in TaskDataset._passes, and the bits of a base seed kept.
_SEED, _COUNT, _PASS, _NEXT = range(4)
_SEED_MASK = (1 << 62) - 1


# What torch's DataLoader raises in the main process when one of its
# workers died: "DataLoader worker (pid(s) 123, 456) exited unexpectedly"
# (its check of the workers while it waits for a batch), or "DataLoader
# worker (pid 123) is killed by signal: Killed." (its SIGCHLD handler).
_WORKER_DIED = re.compile(r"DataLoader worker \(pids?(?:\(s\))? ([\d, ]+)\)")

# How long an error of torch's iterator that does not say a worker died
# waits for one to exit, in seconds: a worker killed while it sent a batch
# breaks that batch's transfer (the main process cannot fetch its tensors)
# before it is seen dead.
DEATH_WAIT = 2.0

# Backoff of a rank's client while the master has no task for it (the next
# pass waits for the other ranks' last finishes): short, so that an epoch
# starts soon after the pass does.
_MIN_BACKOFF, _MAX_BACKOFF = 0.05, 1.0

# What DataLoader forms itself: torch's DataLoader must not be given them.
_OURS = frozenset({"batch_size", "shuffle", "sampler", "batch_sampler", "drop_last"})


class DataLoader:
    """A data loader whose main process is the trainer: it fetches tasks
    from the master and forms the batches (Client.batches), while torch's
    DataLoader workers only apply dataset.transform to each record and
    collate the batch. Each `for batch in loader:` is one pass (epoch): the
    first the pass current at the master (dataset_status), then the next,
    and so on; one begun once every pass is done yields nothing.

    Under torch.distributed (is_initialized(), or group=(rank, ranks)
    given), the process is rank rank of a group of ranks ranks (DDP): the
    master hands it a fixed share of each pass, and it yields exactly the
    batches of its plan, so that every rank runs the same number of steps
    in every pass (no join() needed, and join() works too), every record
    of the pass is in exactly one batch of one rank, no batch is empty and
    only a rank's last batch (or last two: its plan's B-1, 1) is smaller
    than batch_size. loader.plan is the plan of the pass being trained,
    once its first task came: a dict of pass, rank, ranks, share (records
    of the rank), batches (K, the same for every rank), batch_size and
    batch_sizes (doc/pytorch.md). Without a group, it trains each pass
    alone: batches of batch_size, the last smaller, and plan is None.

    The master is the dataset's (TaskDataset: addr or endpoints, token,
    dataset, dataset_name, name, prefetch); each rank is one trainer,
    named f"{dataset.name or hostname-pid-xxxx}-rank{rank}". A task is
    reported finished once every record of it was in a batch the loop
    received and the loop asked for the next (or left the pass): batches
    formed ahead for torch's prefetching are not trained yet (without a
    group, when other trainers hold tasks of the pass too, a pass's last
    tasks are reported finished once all their records went into batches
    and the master has no task to give: it ends the pass only once they
    are; see Client.batches). One iteration at a time.

    num_workers, collate_fn and torch's other DataLoader arguments
    (pin_memory, timeout, worker_init_fn, multiprocessing_context,
    prefetch_factor, persistent_workers, ...) are torch's; batch_size is
    the batches' size; sampler, batch_sampler, shuffle and drop_last are
    refused (the master orders the records: its -shuffle-seed).

    A worker that dies (killed, out of memory) costs a pause, nothing
    else: torch notices it (its check of the workers while it waits for a
    batch, within 5 s; its SIGCHLD handler, which would raise in the middle
    of a training step, is kept off for these workers), and the loader
    logs a warning, starts new workers (all of them: the rank's other
    workers are restarted too), and has them make first the batches
    already formed and not delivered, in order: no record is lost or
    delivered twice. worker_pids are the pids of the current workers.

    Data checkpoints, as torchdata's StatefulDataLoader: state_dict(),
    called by every rank at the same step, after its optimizer step, takes
    a checkpoint of the data position at the master with every rank and
    returns a small dict to save with the model and the optimizer;
    load_state_dict(state), called by every rank of the restarted job
    before its first `for`, takes the master back to it: the next `for`
    yields the rest of that pass, on this job's world size. Trained are the
    batches delivered to the loop up to state_dict (the one it just stepped
    on included); batches formed or prefetched by workers and not delivered
    are not. restart names this job's checkpoints (default: drawn by rank
    0 and broadcast through torch.distributed as the first `for` begins,
    or as load_state_dict runs; give one, the same on every rank and new
    at each start of the job, for a group given by hand without
    torch.distributed)."""

    def __init__(self, dataset: TaskDataset, batch_size: int, *, num_workers: int = 0,
                 group: Optional[Tuple[int, int]] = None, collate_fn: Optional[Callable[[List[Any]], Any]] = None,
                 restart: Optional[str] = None, **kwargs: Any) -> None:
        if not isinstance(dataset, TaskDataset):
            raise TypeError(f"dataset is a TaskDataset, not {type(dataset).__name__}")
        refused = _OURS & set(kwargs)
        if refused:
            raise TypeError(f"DataLoader forms the batches itself: {', '.join(sorted(refused))} is not an argument")
        if batch_size < 1:
            raise ValueError(f"batch size {batch_size}: want 1 or more")
        _check_torch()
        self.dataset, self.batch_size, self.num_workers = dataset, batch_size, num_workers
        self._group = tuple(group) if group is not None else None
        self._feed = _Feed()
        if collate_fn is not None:
            kwargs["collate_fn"] = collate_fn
        self._torch = _Loader(_Transformed(dataset.transform), batch_sampler=self._feed, num_workers=num_workers,
                              **kwargs)
        self._client: Optional[Client] = None
        self._next_pass: Optional[int] = None
        self._batches: Optional[Batches] = None
        self._iterator: Any = None
        self.pass_: Optional[int] = None  # the pass of the current (or last) iteration
        self._iterating = False  # a `for` runs
        self._delivered = 0  # batches of it delivered to the loop
        self._given_restart = restart
        self._restart_id = restart  # the name of this job's checkpoints (and of its restart, after load_state_dict)
        self._checkpoints = 0  # checkpoints taken in it
        self.rewound: Optional[Dict[str, Any]] = None  # load_state_dict's Rewind answer

    @property
    def group(self) -> Optional[Tuple[int, int]]:
        """(rank, ranks): given, or torch.distributed's when initialized;
        None outside any group."""
        if self._group is None and torch.distributed.is_available() and torch.distributed.is_initialized():
            self._group = (torch.distributed.get_rank(), torch.distributed.get_world_size())
        return self._group  # type: ignore[return-value]

    @property
    def plan(self) -> Optional[Dict[str, Any]]:
        """The rank's plan of the pass being trained (see the class); None
        before its first task, and outside a group."""
        return self._batches.plan if self._batches is not None else None

    @property
    def worker_pids(self) -> List[int]:
        """The pids of the current iteration's DataLoader workers."""
        it = self._iterator if self._iterator is not None else self._torch._iterator
        workers = getattr(it, "_workers", None) or []
        return [w.pid for w in workers]

    @property
    def client(self) -> Client:
        """The trainer's client (made at the first iteration)."""
        if self._client is None:
            d, group = self.dataset, self.group
            resolver = d.addr if d.addr is not None else EtcdResolver(d.endpoints, d.namespace)
            name = d.name or trainer_name()
            if group is not None:
                name = f"{name}-rank{group[0]}"
            self._client = Client(resolver, token=d.token, prefetch=d.prefetch, name=name, dataset=d.dataset_name,
                                  min_backoff=_MIN_BACKOFF, max_backoff=_MAX_BACKOFF)
            if d.dataset:
                self._client.report_dataset(d.dataset)
        return self._client

    def close(self) -> None:
        """Stops the workers of persistent_workers and drops the connection."""
        _shutdown(self._iterator)
        _shutdown(self._torch._iterator)
        self._iterator = None
        self._torch._iterator = None
        if self._client is not None:
            self._client.close()

    def state_dict(self) -> Dict[str, Any]:
        """Takes a data checkpoint with every rank, and returns what to save
        with the model: a small dict (no record data), the same on every
        rank: {"checkpoint": the master's ID, "name", "restart", "pass": the
        pass the next `for` after load_state_dict trains the rest of,
        "ranks", "batch_size", "dataset"}.

        Every rank calls it at the same step, after its optimizer step (or
        between two `for`s): it returns once every rank took it (a barrier;
        CheckpointIncomplete when a rank did not come within the master's
        -checkpoint-wait: nothing was stored). Trained, in the pass being
        trained, are the records of the batches delivered to the loop (the
        one it just stepped on included), on every rank; batches formed or
        prefetched by the workers and not delivered are not."""
        group = self.group
        ranks = group[1] if group is not None else 1
        if self._restart_id is None:
            self._restart_id = self._agree(_restart_name(), "state_dict")
        batches = self._batches
        if self._iterating and batches is not None:
            batches.consumed(self._delivered)  # the batch the loop stepped on is trained
            p = self.pass_
        elif self._next_pass is not None:
            p = self._next_pass
        else:
            p = self.client.dataset_status().get("Pass", 0)
        self._checkpoints += 1
        name = f"{self._restart_id}-{self._checkpoints}"
        reply = self.client.checkpoint(name, trainers=ranks)
        return {"checkpoint": reply["ID"], "name": name, "restart": self._restart_id, "pass": p, "ranks": ranks,
                "batch_size": self.batch_size, "dataset": self.dataset.dataset_name}

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        """Takes the master back to the checkpoint of state (state_dict's):
        called by every rank of the restarted job, the same state, before
        its first `for`. The restart's name is drawn by rank 0 and
        broadcast (or the loader's restart), so that the master rewinds
        once (Client.rewind: the first rank's call rewinds, the others find
        it done). The next `for` yields the rest of the checkpoint's pass
        (possibly nothing: every rank then runs no step), shared out
        between this job's ranks, whatever their number; the one after it
        the next pass. rewound is the master's answer."""
        if self._iterating:
            raise RuntimeError("load_state_dict while a `for` over the loader runs: call it before the first")
        restart = self._given_restart or self._agree(_restart_name(), "load_state_dict")
        self.rewound = dict(self.client.rewind(int(state["checkpoint"]), restart))
        self._restart_id, self._checkpoints = restart, 0
        self._next_pass = int(state["pass"])
        log.info("trainmaster: restart %s from checkpoint %s (%s): pass %d%s", restart, state["checkpoint"],
                 state.get("name"), self._next_pass, " rewound" if self.rewound["Rewound"] else "")

    def _agree(self, drawn: str, what: str) -> str:
        """drawn on rank 0, as every rank of the group receives it
        (torch.distributed's broadcast_object_list); drawn outside a
        group."""
        group = self.group
        if group is None or group[1] == 1:
            return drawn
        if not (torch.distributed.is_available() and torch.distributed.is_initialized()):
            raise RuntimeError(f"DataLoader.{what}: a group given by hand, without torch.distributed: give the loader "
                               "restart=, a name the same on every rank and new at each restart")
        shared: List[Optional[str]] = [drawn if torch.distributed.get_rank() == 0 else None]
        torch.distributed.broadcast_object_list(shared, src=0)
        return str(shared[0])

    def __iter__(self) -> Iterator[Any]:
        client, group = self.client, self.group
        if self._restart_id is None and (group is None or group[1] == 1 or torch.distributed.is_initialized()):
            # The name of this job's checkpoints, agreed on now, as every
            # rank begins its first `for`: state_dict then needs no
            # collective call (a rank calling it alone is told
            # CheckpointIncomplete, it does not hang in a broadcast).
            self._restart_id = self._agree(_restart_name(), "__iter__")
        p = self._next_pass if self._next_pass is not None else client.dataset_status().get("Pass", 0)
        self.pass_ = p
        batches = client.batches(self.batch_size, group=group, of_pass=p, hold=True)
        self._batches = batches
        self._feed.start(batches)
        self._iterating, self._delivered = True, 0
        delivered = 0
        try:
            while True:
                try:
                    if self._iterator is None:
                        self._iterator = self._new_iterator()
                    batch = next(self._iterator)
                except StopIteration:
                    break
                except Exception as e:  # noqa: BLE001 (a worker died, or raised)
                    pids = self._dead_workers(e)
                    if not pids:
                        raise
                    self._restart(pids, p)
                    continue
                self._feed.delivered()
                delivered += 1
                self._delivered = delivered
                yield batch
                batches.consumed(delivered)  # the loop asks for the next: this one was trained
        finally:
            self._iterating = False
            batches.consumed(delivered)
            if not self._torch.persistent_workers:
                _shutdown(self._iterator)
            self._iterator = None
            batches.close()
            self._next_pass = p + 1

    def _new_iterator(self) -> Any:
        """torch's iterator of this pass: new workers, or, with
        persistent_workers, the last pass's again."""
        return iter(self._torch)

    def _dead_workers(self, e: Exception) -> str:
        """The pids of the workers that died, if that is what e says: torch's
        RuntimeError naming them, or another error of the iterator (a batch
        a worker killed in the middle of sending it, whose tensors torch
        then cannot fetch from it: ConnectionResetError) while a worker has
        exited or exits within DEATH_WAIT seconds. Empty for any other
        error (raised in a worker by the transform, or by the master)."""
        if self.num_workers == 0 or self._iterator is None:
            return ""
        died = _WORKER_DIED.search(str(e))
        if died is not None:
            return died.group(1).strip()
        workers = list(getattr(self._iterator, "_workers", None) or [])
        if not workers:
            return ""
        exited = multiprocessing.connection.wait([w.sentinel for w in workers], timeout=DEATH_WAIT)
        return ", ".join(str(w.pid) for w in workers if w.sentinel in exited)

    def _restart(self, pids: str, p: int) -> None:
        """Drops the iterator whose worker died, and has the next one make
        first the batches formed and not delivered."""
        n = self._feed.replay()
        log.warning("trainmaster: DataLoader worker(s) %s died in pass %d; starting new workers and replaying the %d "
                    "batch(es) they had taken and not delivered: none is lost or delivered twice", pids.strip(), p, n)
        _shutdown(self._iterator)
        self._iterator = None
        self._torch._iterator = None  # persistent workers too: new ones


def _restart_name() -> str:
    """A name for a job's checkpoints, new at each start of the job."""
    return f"r{secrets.token_hex(6)}"


class _Transformed(torch.utils.data.Dataset):
    """The map-style dataset torch's workers read: a record (bytes, or an
    index of an index-range dataset) is its own key, and its item is
    transform(record)."""

    def __init__(self, transform: Optional[Callable[[Union[bytes, int]], Any]]) -> None:
        self.transform = transform

    def __getitem__(self, record: Union[bytes, int]) -> Any:
        return self.transform(record) if self.transform is not None else record


class _Feed:
    """The batch sampler of torch's DataLoader: the batches the main
    process forms (Batches), those formed and not delivered yet replayed
    first after a worker died. Delivery is in order: torch's DataLoader
    yields batches in its sampler's order."""

    def __init__(self) -> None:
        self._batches: Optional[Batches] = None
        self._formed: Deque[List[Any]] = collections.deque()  # handed to torch, not delivered yet
        self._replay: Deque[List[Any]] = collections.deque()

    def start(self, batches: Batches) -> None:
        self._batches = batches
        self._formed.clear()
        self._replay.clear()

    def delivered(self) -> None:
        self._formed.popleft()

    def replay(self) -> int:
        """Has the next iteration replay the batches formed and not
        delivered; returns how many."""
        self._replay = collections.deque(self._formed)
        return len(self._replay)

    def __iter__(self) -> Iterator[List[Any]]:
        replay = self._replay
        while replay:
            yield replay.popleft()
        if self._batches is None:
            return
        for batch in self._batches:
            self._formed.append(batch)
            yield batch


def _check_torch() -> None:
    """The private parts of torch's DataLoader this module relies on, to
    keep the SIGCHLD handler off: a torch without them is refused clearly
    (python/tests test them)."""
    it = torch.utils.data.dataloader._MultiProcessingDataLoaderIter
    missing = [name for name, there in (("signal_handling._remove_worker_pids", hasattr(signal_handling, "_remove_worker_pids")),
                                        ("_MultiProcessingDataLoaderIter._reset", hasattr(it, "_reset")),
                                        ("_MultiProcessingDataLoaderIter._shutdown_workers", hasattr(it, "_shutdown_workers")))
               if not there]
    if missing:
        raise RuntimeError(f"trainmaster.torch.DataLoader: this torch ({torch.__version__}) lacks {', '.join(missing)}, "
                           "which it needs to keep torch's SIGCHLD handler off for its workers")


class _Iterator(torch.utils.data.dataloader._MultiProcessingDataLoaderIter):  # type: ignore[misc]
    """torch's iterator over workers, without its SIGCHLD handler for them:
    that handler raises in the main thread, wherever it is (in the middle
    of a training step), when a worker dies; torch's check of the workers
    while it waits for a batch raises in __next__ instead, where DataLoader
    replays. The workers' pids are unregistered before the first batch is
    asked for (__init__ registers them, then calls _reset)."""

    def _reset(self, loader: Any, first_iter: bool = False) -> None:
        if getattr(self, "_worker_pids_set", False):
            signal_handling._remove_worker_pids(id(self))
            self._worker_pids_set = False
        super()._reset(loader, first_iter)


class _Loader(torch.utils.data.DataLoader):
    """torch's DataLoader, its iterator over workers _Iterator."""

    def _get_iterator(self) -> Any:
        if self.num_workers == 0:
            return super()._get_iterator()
        self.check_worker_number_rationality()
        return _Iterator(self)


def _shutdown(iterator: Any) -> None:
    """Stops the workers of a torch iterator, if it has any."""
    stop = getattr(iterator, "_shutdown_workers", None)
    if stop is not None:
        stop()
