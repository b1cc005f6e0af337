// Package master is the master service: it accepts the dataset trainers
// report, hands out tasks over net/rpc and takes reports back, keeping every
// change of its queues in a Store before the call that caused it replies.
//
// The queue logic lives in package taskqueue; this package adds the RPC
// surface (the wire contract), the timer that expires pending tasks, logging,
// and the discipline around the Store: an operation changes the queues,
// commits the Change, and only then replies.
//
// Commits are grouped: operations change the queues under one lock, which
// is never held across a Store call, and the changes made while one commit
// is in flight are merged and committed together in the next, one group at
// a time and in order. A reply waits until its change, and every change
// before it, is durable, so nobody is told of a state a crash could undo.
// When a commit fails, its callers and everyone queued behind them get the
// error and the service reloads its state from the Store before the next
// operation, so memory never stays ahead of what is durable (this also
// covers commits whose outcome is unknown).
package master
