package trainerport

import "fmt"

// The default of Limits.MaxConns comes from the process's limit of open
// files (RLIMIT_NOFILE's soft limit, which Go raises to the hard limit
// when the process starts: the hard limit is what counts). Each trainer's
// connection takes a file descriptor, and the master needs some besides.
// Over the limit, accepting fails (and is retried, accept.go) for
// trainers and etcd's connections alike; within MaxConns a connection too
// many is closed at once with a warning, and the master keeps the
// descriptors it needs. So the default is the limit less ReservedFiles, at
// most MaxDefaultConns.

// ReservedFiles is how many file descriptors the default MaxConns leaves
// to the rest of the master: its etcd client's connections (and an
// embedded etcd's files and listeners), the HTTP side door's listener and
// its clients (Prometheus, browsers, other masters' pages), log and
// profile files, and the connection accepted over MaxConns before it is
// closed.
const ReservedFiles = 256

// MaxDefaultConns caps the default MaxConns where the file limit is larger
// (containers commonly allow 1,048,576): 65,536 idle connections take
// about 1.3 GiB of the master's memory for the port alone (20 KiB each
// over gob). A job of more trainers sets -max-conns.
const MaxDefaultConns = 65536

// ConnsDefault is the default of Limits.MaxConns in this process, and why.
type ConnsDefault struct {
	MaxConns int
	Why      string // a sentence for the start-up log
}

// DefaultMaxConns returns the default of the master's -max-conns under a
// process's file limit (its soft RLIMIT_NOFILE; 0: unknown).
func DefaultMaxConns(limit uint64) ConnsDefault {
	var d ConnsDefault
	const raise = "; raise the hard limit (ulimit -Hn, systemd's LimitNOFILE, docker's --ulimit nofile) or set -max-conns for more trainers"
	switch {
	case limit == 0:
		d.MaxConns = FallbackMaxConns
		d.Why = fmt.Sprintf("-max-conns defaults to %d: the file limit (RLIMIT_NOFILE) is unknown here", d.MaxConns)
	case limit <= 2*ReservedFiles:
		d.MaxConns = int(max(limit/2, 1))
		d.Why = fmt.Sprintf("-max-conns defaults to %d: half the file limit (RLIMIT_NOFILE) of %d, too small to keep %d descriptors for etcd, the side door and files%s",
			d.MaxConns, limit, ReservedFiles, raise)
	case limit-ReservedFiles > MaxDefaultConns:
		d.MaxConns = MaxDefaultConns
		d.Why = fmt.Sprintf("-max-conns defaults to %d, its ceiling: the file limit (RLIMIT_NOFILE) of %d allows more connections, each taking the master's memory; set -max-conns for more trainers",
			d.MaxConns, limit)
	default:
		d.MaxConns = int(limit - ReservedFiles)
		d.Why = fmt.Sprintf("-max-conns defaults to %d: the file limit (RLIMIT_NOFILE) of %d, less %d descriptors kept for etcd, the side door and files%s",
			d.MaxConns, limit, ReservedFiles, raise)
	}
	return d
}
