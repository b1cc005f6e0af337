// Package master is the master service: it accepts the datasets trainers
// report, hands out their tasks and takes reports back, keeping every
// change of its queues in a Store before the call that caused it replies.
//
// Service (job.go) routes each call to the dataset it names; a
// datasetService (dataset.go) holds one dataset's queues (package
// taskqueue), its timers and its commits. Every operation on a dataset
// goes one way (durable, commit.go): under the dataset's lock it changes
// the queues and returns its reply, its change and its events (log lines
// and Observer calls, as data); the change is queued, and once it and
// every change before it is durable the events are emitted and the call
// replies, so nobody is told of a state a crash could undo. Status waits
// the same way.
//
// One goroutine per dataset, the committer, owns its commits: it runs
// while changes are queued, merges those made while a commit is in flight
// into the next group (up to the Store's limits: GroupLimiter), and commits
// the groups one at a time, in order. When a commit fails, its callers and
// everyone queued behind them get the error and the state is reloaded from
// the Store (within CommitTimeout) before the next operation. A write the
// Store rejects with ErrLeadershipLost stops the service at once: its
// state is dropped and every call is answered wire.ErrNotServing; Run,
// which ties the service to a term's context, then returns.
//
// The dataset's lock is held across a Store call in three places only,
// where nothing else could proceed anyway: Restore and the reload after a
// failed commit (Load), and the save of a newly accepted dataset
// (SaveDataset).
//
// What a client can make the master keep is bounded: a failure reason is
// cut to wire.MaxErrorBytes before it is stored or logged, and a line of
// the log that a client can repeat without changing anything is logged
// at most once per ratelog.Interval (events.go).
package master
