// Package master is the master service: it accepts the dataset trainers
// report, hands out tasks over net/rpc and takes reports back, keeping every
// change of its queues in a Store before the call that caused it replies.
//
// The queue logic lives in package taskqueue; this package adds the RPC
// surface (the wire contract), the timer that expires pending tasks, logging,
// and the discipline around the Store: an operation changes the queues,
// commits the Change, and only then replies.
//
// Commits are grouped: operations change the queues under the service's
// lock and queue their change; the changes made while one commit is in
// flight are merged and committed together in the next, one group at a time
// and in order. A reply waits until its change, and every change before it,
// is durable, so nobody is told of a state a crash could undo; Status waits
// the same way. When a commit fails, its callers and everyone queued behind
// them get the error and the service reloads its state from the Store
// (within CommitTimeout) before the next operation, so memory never stays
// ahead of what is durable (this also covers commits whose outcome is
// unknown).
//
// Locking, in one read: every method that takes the lock releases it with a
// defer in the same function. The lock is held across a Store call in three
// places only, where nothing else could proceed anyway: Restore and the
// reload after a failed commit (Load), and the save of a newly accepted
// dataset (SaveDataset). Commits (Commit) run outside it: the operation
// that finds no commit in flight becomes the committer once it has released
// the lock, and commits the queued groups until its own is durable, leaving
// any later ones to a goroutine.
//
// What a client can make the master keep is bounded: a failure reason is
// cut to wire.MaxErrorBytes before it is stored or logged.
package master
