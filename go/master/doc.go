// Package master is the master service: it accepts the dataset trainers
// report, hands out tasks over net/rpc and takes reports back, keeping every
// change of its queues in a Store before the call that caused it replies.
//
// The queue logic lives in package taskqueue; this package adds the RPC
// surface (the wire contract), the timer that expires pending tasks, logging,
// and the discipline around the Store: an operation changes the queues,
// commits the Change, and only then replies. When a commit fails the caller
// gets the error and the service reloads its state from the Store before the
// next operation, so memory never runs ahead of what is durable (this also
// covers commits whose outcome is unknown).
package master
