// Package client is what a training program links in to take its share of a
// dataset from the master: it reports the dataset, asks for tasks, reads
// their RecordIO blocks (or, for an index-range dataset, takes their record
// indexes) and hands the records to the program in order.
//
// Example shows a trainer's loop: report the dataset, range over Records.
//
// A job may hold several named datasets (wire.Dataset): an evaluation
// set beside the training set, say. A client trains one, Config.Dataset
// (empty: "train", the one ReportDataset reports); Declare declares any,
// RecordIO files or an index-range dataset, whose tasks carry record
// indexes for the trainer to map to its own storage (Files helps).
//
// ExampleClient_StartRound shows a trainer of such a dataset, round after
// round.
//
// What it promises:
//   - Records yields every record of each task it receives, in the task's
//     order (the file's, or shuffled with the task's wire.Task.Seed when
//     the master has a -shuffle-seed), tagged with the task's index and
//     pass. The records of a task are all read and checked before the
//     first is yielded, so a task with an unreadable block yields nothing:
//     it is reported failed (the error naming the block's file) and the
//     client moves on.
//   - A task of an index-range dataset reads no file: it yields one Record
//     per index it covers, Index set and Data nil, in the same order
//     (Start+i, or Start+wire.Shuffle(End-Start, Seed)[i]), with the same
//     positions, progress reports and Last. It holds no record in memory:
//     nothing but, with a seed, the shuffle's End-Start ints.
//   - A task is reported finished only once the loop body has returned for
//     its last record and the loop asks for the next one. A loop that stops
//     early (break, or an error) leaves its current task unreported; the
//     master hands it out again when it times out.
//   - While one task is consumed, the next ones (Config.Prefetch) are
//     fetched and read into memory, so at most Prefetch+1 tasks are held.
//     Records are yielded from the buffers the blocks were read into,
//     without a copy, and those buffers are reused for later tasks once a
//     task is consumed: Record.Data is valid only until the loop body
//     returns.
//   - "no task available" and "dataset not reported" are waited out with
//     backoff (after "dataset not reported", the datasets this client
//     reported or declared are reported and declared again, for a new
//     master that lost them), cut short when a finish the client reports
//     meanwhile is recorded (it may be the one the pass waited for: the
//     next pass, or the end, follows at once); "all passes done" ends the loop without
//     error; connection failures (a master closing an idle connection
//     included) and "master is not serving" make the client drop its
//     connection, resolve the master's address again and retry, with
//     backoff, until the context ends, without surfacing an error. A call
//     that has had no reply for 2 s asks the Resolver again, every 2 s,
//     and moves to the master it names if that is another one: a frozen
//     master (SIGSTOP) keeps its connections open, and its standby serves
//     long before Config.CallTimeout.
//   - The loop reports how far it got in its task (as often as the task
//     asks, wire.Task.ProgressMillis, or every Config.ProgressInterval
//     when set; and when it stops in the middle of one), starts a task handed out
//     again where the last dispatch got (wire.Task.From), and drops a task
//     the master says is no longer this trainer's (it timed out and went
//     to another, or another finished it), without reporting it finished.
//   - Config.TLS makes the client speak TLS, and Config.Token presents the
//     master's shared token once per connection before its first call. A
//     "not authenticated" answer, and a certificate refused by either side,
//     are final: the call returns the error rather than retry what would
//     only fail again.
//   - Finish and failure reports carry only the task's Index, Epoch and
//     Pass (and the reason of a failure), never its blocks.
//   - Every task the client sends (GetTask's finished, the zero Task
//     included, TaskFinished and TaskFailed) carries the trainer's name,
//     Config.Name (default "hostname-pid-xxxx"), in wire.Task.Trainer, for the
//     master's per-trainer figures and its knowledge of who holds which
//     task; and Config.Dataset in wire.Task.Dataset, as every progress
//     report does in wire.Progress.Dataset, so that the client gets tasks
//     of that dataset only and its reports are booked there. StartRound
//     and DatasetStatus are about that dataset too.
//   - A Records loop ends when the passes of its dataset's current round
//     are done; StartRound starts the next round (every trainer may ask:
//     a round already started is not started twice, and asking while one
//     runs is answered wire.TextRoundRunning), and a new Records loop
//     trains it, with the round's pass numbers. A Pass loop is a Records
//     loop of one pass, the one of its first task: every later GetTask
//     asks for a task of that pass only (wire.Task.OnePass), and the loop
//     ends when the master answers wire.TextPassOver (its pass is over
//     everywhere, not only here) or wire.TextAllDone.
//     A dataset whose passes have no end (the master's -passes 0,
//     wire.Dataset.Endless) has one round, and its loop runs until ctx
//     ends or the loop is left: its Status says Passes 0, never AllDone.
//   - Every blocking call takes a context first and returns soon after it
//     ends. When the loop ends, or Close is called, the prefetch goroutine
//     stops: nothing is left running.
//   - The library logs nothing unless Config.Log is set.
package client
