"""The trainer's side of the contract, with go/client's promises: report the
dataset (or declare a named one: files, or an index-range whose records the
trainer maps to its own storage), fetch tasks ahead in a background thread,
yield their records, report a task finished only once every record of it
was consumed, report a task failed when a block cannot be read, follow a
failover (find the master again, report or declare the dataset again to a
master that lost it, retry with backoff on "master is not serving" and
broken connections), and stop cleanly when all passes are done.

Client holds the contract's calls; the parts are in calls (the JSON-RPC
session and its retries), pipeline and position (the records pipeline) and
tasks (reading a task), and batches (the batches of one pass, of a rank of
a group or not), and held (what the loops trained that the master may not
know yet: a data checkpoint's report); the shapes and codes of the wire
are in wire. Every report of a task sends its Gen back (a rewind makes
older generations' reports stale), and every GetTask carries an Ask of its
own, sent again with a retry of the same call (calls.Calls resends the
same argument): a GetTask answered but lost in a failover is answered the
same dispatch."""

from __future__ import annotations

import random
import ssl
import threading
from typing import Any, Callable, Dict, Iterator, Optional, Sequence, Tuple, TypeVar, Union

from .batches import Batches
from .calls import Calls
from .errors import MasterError
from .held import Trained
from .pipeline import Loop
from .position import Record
from .tasks import task_indexes
from .wire import (DEFAULT_DATASET, DEFAULT_PROGRESS_INTERVAL, MAX_ERROR_BYTES, MAX_TRAINER_NAME_BYTES, Checkpoint,
                   CheckpointReply, Dataset, Progress, ProgressReply, Report, Rewind, RewindReply, Task,
                   check_checkpoint, check_rank, check_rewind, cut_reason, trainer_name)

__all__ = ["Client", "Record", "Batches", "DEFAULT_DATASET", "MAX_ERROR_BYTES", "MAX_TRAINER_NAME_BYTES", "task_indexes"]

_Arg = TypeVar("_Arg", Task, Progress, Dict[str, Any])


class Client:
    """Talks to the master for one trainer. resolver is the master's
    address ("host:port") or a callable returning it (discovery.EtcdResolver).
    name is the trainer's name, sent with every task for the master's
    per-trainer figures (default "hostname-pid-xxxx"; see trainer_name).
    Safe to use from several threads; one connection, shared.
    progress_interval is how often records() reports how far it got in a
    task (seconds; 0 or less: never), so that after a fault the task's next
    dispatch starts there (wire.Progress), and the master can cut a
    straggling task short for an idle trainer; None (the default): as
    often as each task asks (its ProgressMillis: a fifth of its expected
    time, 1 to 10 s), from its start, DEFAULT_PROGRESS_INTERVAL when it
    asks nothing (follows_master is then set). A call waits call_timeout
    (seconds) for its reply; with a callable resolver, a call without a
    reply for 2 s asks it whether the master moved (a frozen master answers
    nothing), and every 2 s again, and follows it at once if so.
    dataset is the name of the dataset this client trains (default
    "train", the one report_dataset reports): its tasks are the ones
    get_task asks for and records() yields, and every task and progress
    report it sends names it; declare() declares it, start_round() and
    dataset_status() are about it.

    Data checkpoints (checkpoint, rewind): the data position saved with
    the model. A record counts as trained once the loop has it and asks
    for the next one, or takes a checkpoint; records read ahead do not.
    trained keeps what this client's loops trained that the master may not
    know yet (the Held of its checkpoint reports)."""

    def __init__(self, resolver: Union[str, Callable[[], str]], *, token: Optional[str] = None,
                 tls: Optional[ssl.SSLContext] = None, server_name: Optional[str] = None, prefetch: int = 1,
                 min_backoff: float = 0.1, max_backoff: float = 5.0, call_timeout: float = 30.0,
                 name: Optional[str] = None, progress_interval: Optional[float] = None,
                 dataset: str = DEFAULT_DATASET) -> None:
        if not isinstance(dataset, str):
            raise TypeError(f"dataset is a dataset's name, not {type(dataset).__name__} "
                            "(report the files of train with report_dataset)")
        self._calls = Calls(resolver, token=token, tls=tls, server_name=server_name, min_backoff=min_backoff,
                            max_backoff=max_backoff, call_timeout=call_timeout)
        self.name = trainer_name(name)
        self.prefetch = max(prefetch, 1)
        self.call_timeout = call_timeout
        self.follows_master = progress_interval is None
        self.progress_interval = DEFAULT_PROGRESS_INTERVAL if progress_interval is None else progress_interval
        self.dataset = dataset or DEFAULT_DATASET
        self._next_rank_pass = 0  # the pass after the last one a rank's batches() began
        self.trained = Trained(self.dataset)
        # The number of the last GetTask (wire.Task.Ask), from a random
        # start: a trainer restarted with the same name asks anew.
        self._asks = random.getrandbits(62)
        self._asks_mu = threading.Lock()

    # The contract's calls.

    def report_dataset(self, patterns: Sequence[str]) -> None:
        """Reports the dataset train (glob patterns of RecordIO files); the
        first report accepted wins, later ones must name the same patterns.
        Once accepted it is remembered, and reported again to a master that
        lost it."""
        self._call("ReportDataset", list(patterns))
        self._calls.remember(DEFAULT_DATASET, "ReportDataset", list(patterns))

    def declare(self, name: Optional[str] = None, *, patterns: Optional[Sequence[str]] = None,
                records: Optional[int] = None, records_per_task: Optional[int] = None,
                chunks_per_task: Optional[int] = None, passes: Optional[int] = None,
                endless: bool = False) -> None:
        """Declares a named dataset (Master.DeclareDataset; name defaults to
        this client's dataset): RecordIO files (patterns, cut into tasks of
        chunks_per_task chunks), or an index-range dataset of records
        records cut into tasks of records_per_task, whose tasks carry the
        range of record indexes [Start, End) they cover and whose records
        records() yields as indexes (Record.index). passes is how many
        passes a round runs. A field not given (or 0) is left to the
        master (its -chunks-per-task, -passes). endless runs passes without
        end, until the job is stopped (passes not given then): records()
        never ends of itself. The first declaration of a
        name decides it; a later one must describe the same dataset, or is
        refused (MasterError naming both). A declaration accepted is
        remembered and sent again to a master that answers "dataset not
        reported" for that dataset, as report_dataset's patterns are."""
        name = name or self.dataset
        given = {"Patterns": list(patterns) if patterns is not None else None, "ChunksPerTask": chunks_per_task,
                 "Records": records, "RecordsPerTask": records_per_task, "Passes": passes, "Endless": endless}
        d = Dataset(Name=name, **{key: value for key, value in given.items() if value})  # type: ignore[typeddict-item]
        self._call("DeclareDataset", d)
        self._calls.remember(name, "DeclareDataset", d)

    def start_round(self, round: int) -> int:  # noqa: A002 (the contract's name)
        """Starts round `round` of this client's dataset (Master.StartRound):
        its passes run again, round r being the r-th run from 0 (the
        declaration starts round 0). Idempotent: a round already started is
        not started again, so every trainer may ask. Returns the round now
        current; raises RoundRunning when the current round is not over
        (ask again once it is), MasterError for a round further ahead."""
        return self._call("StartRound", {"Dataset": self.dataset, "Round": round})

    def dataset_status(self, name: Optional[str] = None) -> Dict[str, Any]:
        """The progress of a dataset (Master.DatasetStatus; default this
        client's): wire.Status as a dict, with Dataset, its Round and the
        names of every dataset of the job (Datasets); the master omits the
        fields that are zero or empty (Round 0, Dataset "train"). A dataset
        the job lacks shows DatasetReported False (it is not re-declared)."""
        return self._call("DatasetStatus", name or self.dataset)

    def get_task(self, one_pass: Optional[int] = None, group: Optional[Tuple[int, int, int]] = None) -> Task:
        """Takes a task of this client's dataset: a dict with Index, Epoch,
        Pass and Blocks (or, for an index-range dataset, Start and End: the
        record indexes [Start, End) it covers), and maybe From and To (the
        positions to start and stop at), Piece and Of (a piece of task Of,
        cut off a straggler: wire.Task), Seed and Dataset (omitted for
        train). Raises NoTask when every task of the pass is out, AllDone
        at the end. With one_pass, a task of that pass only
        (wire.Task.OnePass): PassOver once the master is at another.

        group, (rank, ranks, batch), asks as rank rank of a group of ranks
        ranks forming batches of batch records (go/wire/group.go; needs
        one_pass): the task then carries the rank's plan of the pass
        (RankRecords, RankBatches, RankLeft), and may be cut at the end of
        its share (To, or a piece). Raises RankDone once the rank was
        handed its whole share, NoTask while the master is not at one_pass
        yet, BadGroup or PassTooSmall (final) for a group the pass
        cannot serve."""
        arg: Dict[str, Any] = {"Trainer": self.name, "Ask": self._ask()}
        if one_pass is not None:
            arg.update(OnePass=True, Pass=one_pass)
        if group is not None:
            if one_pass is None:
                raise ValueError("a rank asks for a task of one pass: give one_pass with group")
            rank, ranks, batch = group
            if rank:  # the master omits zeros, and so does go/client: Rank 0 travels as nothing
                arg["Rank"] = rank
            arg.update(Ranks=ranks, Batch=batch)
        return self._call("GetTask", self._named(arg, self.dataset))

    def _ask(self) -> int:
        """The number of a new GetTask call (its retries, calls.Calls,
        send the same argument, and so the same number)."""
        with self._asks_mu:
            self._asks += 1
            return self._asks

    def task_finished(self, task: Task) -> int:
        """Reports every record of task consumed; returns the report code.
        Once the master answered (or refused) it, the task is no longer
        held for checkpoints."""
        try:
            code = self._call("TaskFinished", self._report(task))
        except MasterError:
            self.trained.acked(task)
            raise
        self.trained.acked(task)
        return code

    def task_failed(self, task: Task, reason: str) -> int:
        """Reports task failed, with reason cut to MAX_ERROR_BYTES."""
        failed = self._report(task)
        failed["Error"] = cut_reason(reason)
        return self._call("TaskFailed", failed)

    def task_progress(self, task: Task, done: int, *, within: Optional[float] = None) -> ProgressReply:
        """Reports the records of task's order before position done trained
        (wire.Progress); returns the master's answer (wire.ProgressReply):
        {"Report": code, "To": n}. Report is the report code (wire.Report:
        1 recorded, 2 already done, 3 stale pass, 4 superseded, 5 too
        soon); To, when above 0, is where this dispatch of task is to stop:
        the position past the last record it is to train (the master cut
        the rest off as a piece for an idle trainer); 0: the task's end,
        unchanged. With
        within, the call gives up (ConnectionLost) after that many seconds
        without an answer instead of retrying until the master answers."""
        progress = Progress(Index=task["Index"], Epoch=task["Epoch"], Pass=task["Pass"], Trainer=self.name, Done=done)
        if task.get("Gen"):
            progress["Gen"] = task["Gen"]
        reply = self._call("TaskProgress", self._named(progress, self._dataset_of(task)), within=within)
        code = reply.get("Report", 0)
        if code == Report.RECORDED:
            self.trained.reported(task, done)
        return ProgressReply(Report=code, To=reply.get("To") or 0)

    def checkpoint(self, name: str, trainers: int = 1, pin: bool = False) -> CheckpointReply:
        """Takes part in the data checkpoint called name (Master.Checkpoint),
        taken by trainers trainers together (1: this client alone; the W
        ranks of a group, each calling it at the same step, with the same
        name), pinned if pin (kept beyond the master's -checkpoints-kept).
        It reports every task this client's loops trained that the master
        may not know yet (Held): the tasks all of whose records were
        trained and whose finish the master has not answered yet, and the
        task being trained with the position trained through: the record
        (or batch) the loop holds counts as trained, records read ahead do
        not. It returns once every trainer of the checkpoint reported and
        the master stored it: {"ID": id, "Kept": [ids kept, oldest
        first]}; keep the ID with the model. Raises CheckpointIncomplete
        when not every trainer reported within the master's
        -checkpoint-wait (nothing was stored), BadCheckpoint for a name
        empty or longer than MAX_CHECKPOINT_NAME_BYTES. Call it from the
        loop's body (between two batches, or at a record), where the model
        is saved."""
        held = self.trained.held()
        check_checkpoint(name, trainers, len(held))
        arg = Checkpoint(Name=name, Trainer=self.name, Trainers=trainers)
        if pin:
            arg["Pin"] = True
        if held:
            arg["Held"] = held
        reply = self._call("Checkpoint", arg)
        return CheckpointReply(ID=reply.get("ID") or 0, Kept=list(reply.get("Kept") or []))

    def rewind(self, checkpoint_id: int, restart: str) -> RewindReply:
        """Takes the master back to checkpoint checkpoint_id for the restart
        called restart (Master.Rewind): every dataset of the job goes back
        to what it held trained then, in a new generation (reports of
        earlier dispatches are answered stale pass). Every trainer (rank)
        of a restart calls it, with the same restart, before its first
        loop; the first call rewinds, the others (and retries) find it
        done: {"Rewound": True} for that first call only, "Datasets": the
        datasets taken back. restart names one restart: a later restart
        from the same checkpoint names another. Raises UnknownCheckpoint
        for a checkpoint the master does not keep."""
        check_rewind(checkpoint_id, restart)
        reply = self._call("Rewind", Rewind(ID=checkpoint_id, Restart=restart, Trainer=self.name))
        self.trained.clear()  # every dispatch before is of an older generation now
        return RewindReply(Rewound=bool(reply.get("Rewound")), Datasets=list(reply.get("Datasets") or []))

    def _report(self, task: Task) -> Task:
        """What is sent back of a task: its identity (with its Gen), never
        its blocks, this trainer's name and the task's dataset."""
        report = Task(Index=task["Index"], Epoch=task["Epoch"], Pass=task["Pass"], Trainer=self.name)
        if task.get("Gen"):
            report["Gen"] = task["Gen"]
        return self._named(report, self._dataset_of(task))

    def _dataset_of(self, task: Task) -> str:
        """The dataset of a task: the one the master named in it (it omits
        train), else this client's."""
        return task.get("Dataset") or self.dataset

    @staticmethod
    def _named(arg: _Arg, dataset: str) -> _Arg:
        """arg naming dataset; train is left unnamed, as the master's replies
        leave it (the contract's default), so that what a train trainer
        sends is what it sent before named datasets."""
        if dataset != DEFAULT_DATASET:
            arg["Dataset"] = dataset
        return arg

    def status(self) -> Dict[str, Any]:
        """The master's progress (wire.Status as a dict)."""
        return self._call("Status", 0)

    def close(self) -> None:
        """Drops the connection and ends every call and records() loop."""
        self._calls.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, method: str, arg: Any, *, within: Optional[float] = None) -> Any:
        """Calls Master.<method> with the retries of calls.Calls."""
        return self._calls.call(method, arg, within=within)

    def batches(self, batch_size: int, group: Optional[Tuple[int, int]] = None, of_pass: Optional[int] = None, *,
                hold: bool = False) -> Batches:
        """Yields the batches of one pass, as lists of records (bytes, or
        the indexes, ints, of an index-range dataset's records), formed
        across the tasks the master hands this trainer.

        group, (rank, ranks), makes it rank rank of a group of ranks ranks
        training in lockstep (DDP, go/wire/group.go): it asks for its
        tasks as that rank, and the master hands it a fixed share of the
        pass; it yields exactly the batches of its plan,
        wire.batch_sizes(RankRecords, RankBatches, batch_size) from the
        pass's first task: every rank of the group the same number of
        batches, none empty, only the last (or last two) smaller than
        batch_size, every record of the pass in one rank's batches once.
        of_pass is the pass to train; for a rank, by default the master's
        current pass (dataset_status), or, if later, the pass after the one
        this client's last batches() trained (a rank done with its share
        asks before the others are: the master then waits for them). Once
        the plan is known it is the iterator's plan (Batches.plan). A rank
        handed fewer records than
        its share (a task failed for good) logs an error naming rank,
        pass and counts and ends the pass with what it has: it then runs
        fewer steps than the others. The master's final answers, BadGroup
        and PassTooSmall, are raised. Without group, it yields batches of
        batch_size, the last smaller, of the pass of its first task (or
        of_pass), and ends when the pass is over at the master
        (records(per_pass=True)), or when the master has no task to give
        and every task it has left in the pass is this trainer's (its last
        finishes then end the pass at the master); when other trainers
        hold tasks of the pass too, its last tasks are reported finished
        once all their records went into batches (the master ends the
        pass only once they are).

        Tasks are fetched and read one ahead (prefetch) in a background
        thread, waiting with backoff while the master has none to give
        ("no task available"), following the master after a failover,
        starting and stopping each task at its From and To, in the order
        of its Seed, as records() does. A task is reported finished once
        every record of it was in a batch the loop has trained: the loop
        asked for the next batch, or closed the iterator (close(), or
        leaving a `for` over it, which closes it); records read ahead are
        not. With hold, only the batches consumed(n) says were trained
        count (see Batches)."""
        if batch_size < 1:
            raise ValueError(f"batch size {batch_size}: want 1 or more")
        ranked: Optional[Tuple[int, int, int]] = None
        if group is not None:
            rank, ranks = group
            check_rank(rank, ranks, batch_size)
            ranked = (rank, ranks, batch_size)
            if of_pass is None:
                of_pass = max(self.dataset_status().get("Pass", 0), self._next_rank_pass)
        loop = Loop(self, self._calls.backoff, per_pass=True, of_pass=of_pass, group=ranked, marks=True)
        return Batches(loop, batch_size, group=group, of_pass=of_pass, hold=hold, on_begin=self._rank_began)

    def _rank_began(self, p: int) -> None:
        """A rank's batches() got the first task of pass p: its next
        batches() trains a later pass."""
        self._next_rank_pass = max(self._next_rank_pass, p + 1)

    def records(self, *, finish_when_read: bool = False, per_pass: bool = False,
                of_pass: Optional[int] = None) -> Iterator[Record]:
        """Yields the records of the tasks the master hands out, each task's
        in order, until all passes are done; with per_pass, until the pass
        it trains is over at the master (go/client's Client.Pass): it
        trains the pass of its first task, never takes a task of a later
        one (the master answers "pass over", PassOver, instead), and ends
        when the master moves past it or all passes are done, not when this
        trainer alone finds no task. Called again, it trains the pass
        current then: pass 0, then pass 1, and so on; once all passes are
        done it yields nothing. One left early leaves its pass running (the
        next goes on with it while it is current); one that asks for its
        first task only after its pass ended elsewhere trains the next.
        of_pass (implies per_pass) names the pass to train: the loop yields
        nothing if it is over. A task is reported finished once
        its last record was yielded and the loop asks for more; a task left
        early is not (the master hands it out again). A task the master cuts
        short while it is yielded, to hand its rest to an idle trainer (its
        -stragglers split), stops where it was cut, its record at the cut
        marked last if the cut was learned before it was yielded (a loop
        already past the cut stops at once, without one), and is reported
        finished too. A task that waited at least a second in the prefetch
        queue is first checked with the master (when progress is reported):
        one that went to another trainer meanwhile is skipped, and not
        reported finished; one cut short meanwhile is cut. With finish_when_read
        a task is reported finished as soon as all of it is read, for a
        consumer that may stop asking for records until others have worked
        (a DataLoader worker, which the main process asks in turn): it must
        not hold tasks another trainer waits for at the end of a pass. Its
        records are then lost for the pass if the process dies before they
        are yielded. Tasks are fetched and read ahead in a background
        thread, prefetch at a time, and finishes are reported by another,
        so that the loop never waits for the master."""
        return Loop(self, self._calls.backoff, finish_when_read=finish_when_read, per_pass=per_pass,
                    of_pass=of_pass).run()
