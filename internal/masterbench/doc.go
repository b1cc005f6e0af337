// Package masterbench measures the master against a real etcd: how many
// tasks it hands out per second to concurrent synthetic trainers, with what
// latency, how many etcd bytes each dispatch costs, how much memory the
// master holds and how long a new leader takes to serve; and, against the
// same etcd in the same run, the rate of bare fenced transactions, which
// bounds what any master committing every dispatch can do.
//
// The master runs as its own process (the master binary), so its memory is
// its own and the RPCs cross loopback TCP as in production. Trainers are
// goroutines of the calling process, each with its own connection, doing
// GetTask round trips that carry the finish of the previous task.
//
// With the side door (Config.Door), the master serves -http-addr, every
// trainer sends a name of its own, and the bench reads /metrics and
// /status.json once a second during each window, as Prometheus and a person
// with the status page open would: what that costs the master is part of
// the figure. DoorBoth runs each row with and without the door, on two
// masters of the same dataset, in four windows in a symmetric order (off,
// on, on, off or the reverse, drawn at random), and divides the two.
//
// RunPaced is the paced mode: instead of calling back to back, each of
// many trainers calls once per period at a phase of its own, as a large
// job's trainers do, against a fresh master with its side door; the bench
// reports the calls' latencies and rate, the master's memory, threads and
// descriptors, what reading its /metrics takes, etcd's fsyncs and the
// master's commits over the window, and how long the tasks of a tenth of
// the trainers take to be dispatched again once their connections close.
//
// Figures are what one run on one machine measured: they vary with the disk
// (etcd fsyncs every commit), the cores and whatever else runs. The ratio to
// the bare transaction rate, measured minutes apart on the same etcd, is
// the figure that travels between machines.
package masterbench
