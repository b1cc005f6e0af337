package trainerport

import (
	"time"

	"github.com/pkg/errors"
)

// Limits bound what the trainer port lets one client cost the master,
// whatever it sends. A zero field takes its default, which is also the
// default of the master's flag:
//
//	field            default                 flag of cmd/master
//	MaxConns         1024                    -max-conns
//	IdleTimeout      30m                     -idle-timeout
//	MaxRequestBytes  256 KiB                 -max-request-bytes
//	MaxInflight      16                      -max-inflight
//
// The master's -max-conns defaults instead to the process's limit of open
// files less ReservedFiles, at most MaxDefaultConns (DefaultMaxConns,
// filelimit.go): 19,744 under a limit of 20,000. The port reads no limit
// of the process itself: it knows only the contract.
//
// The largest request of the master's contract is a report of a dataset at
// its limits (64 KiB of patterns, 10,000 of them), about 75 KiB framed,
// well under the default size.
//
// Together they bound one connection's memory, whatever the client sends.
// Decoded, an argument can take 40 times its size on the wire (a []string
// of empty strings; a receiver's argument type can leave out the fields it
// does not need, which gob then skips unread), so a connection holds at
// most one argument over 4 KiB (largeRequestBytes) until its reply is
// written, and MaxInflight-1 smaller ones: about 40 x MaxRequestBytes + 40 x 4 KiB x MaxInflight, 12.5 MiB at
// the defaults, and for a few milliseconds only when the call is refused
// at once (a report over the dataset limits). The master's memory is
// bounded by MaxConns times that: lower -max-conns towards the number of
// trainers on a small machine. An idle connection, as most are between
// their calls, holds much less: one goroutine on a 2 KiB stack (4 KiB
// under TLS), and about 3 KiB of heap over JSON-RPC, 8 KiB over gob once
// idle for a second (12 to 17 KiB before, its decoder's compiled types
// given back then), 7 KiB more under TLS (BenchmarkIdleConnections).
type Limits struct {
	// MaxConns caps the connections served at once. A connection accepted
	// over the cap is closed at once, before anything is read from it (a
	// client sees the connection end; go/client retries with backoff), and
	// a warning says so, through Config.Warnings (the leader: at most once
	// every 10 s).
	MaxConns int
	// IdleTimeout closes a connection that has no call in flight and has
	// received no byte for this long. Negative: never. go/client redials
	// on its next call without surfacing an error.
	IdleTimeout time.Duration
	// MaxRequestBytes caps one message of a request as framed on the wire:
	// its header, or its argument (and each type description the encoding
	// sends before a value). An argument over the cap is skipped without
	// being held and answered an error naming its size, the cap and the
	// flag, and the connection goes on; a header over the cap, or a stream
	// whose framing cannot be followed, closes the connection with a log
	// line. In JSON-RPC it caps the bytes read for one request, and a
	// request over it closes the connection (JSON cannot skip one).
	MaxRequestBytes int
	// MaxInflight caps the calls of one connection awaiting their replies:
	// while that many do, the master reads nothing more from the
	// connection, so that TCP's flow control holds the client back instead
	// of the master queueing its requests.
	MaxInflight int
}

// The defaults of Limits, but MaxConns's (DefaultMaxConns).
const (
	FallbackMaxConns       = 1024 // Limits.MaxConns unset (the file limit is the binary's to read), and DefaultMaxConns where the file limit is unknown
	DefaultIdleTimeout     = 30 * time.Minute
	DefaultMaxRequestBytes = 256 << 10
	DefaultMaxInflight     = 16
)

// withDefaults returns l with every zero field set to its default, or an
// error naming a field that cannot be honoured.
func (l Limits) withDefaults() (Limits, error) {
	setDefault(&l.MaxConns, FallbackMaxConns)
	setDefault(&l.MaxRequestBytes, DefaultMaxRequestBytes)
	setDefault(&l.MaxInflight, DefaultMaxInflight)
	if l.IdleTimeout == 0 {
		l.IdleTimeout = DefaultIdleTimeout
	}
	switch {
	case l.MaxConns < 0:
		return l, errors.Errorf("master: -max-conns must be positive, not %d", l.MaxConns)
	case l.MaxRequestBytes < 0:
		return l, errors.Errorf("master: -max-request-bytes must be positive, not %d", l.MaxRequestBytes)
	case l.MaxRequestBytes > maxSkipBytes:
		return l, errors.Errorf("master: -max-request-bytes must be at most %d, not %d", maxSkipBytes, l.MaxRequestBytes)
	case l.MaxInflight < 0:
		return l, errors.Errorf("master: -max-inflight must be positive, not %d", l.MaxInflight)
	}
	return l, nil
}

// Validate says why l cannot be honoured, if it cannot.
func (l Limits) Validate() error {
	_, err := l.withDefaults()
	return err
}

func setDefault(v *int, def int) {
	if *v == 0 {
		*v = def
	}
}

// tlsHandshakeTimeout bounds the TLS handshake of a new connection.
const tlsHandshakeTimeout = 10 * time.Second
