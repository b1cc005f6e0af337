package trainerport

import (
	"crypto/tls"
	"net"
	"net/rpc"
	"sync"
	"time"

	"github.com/pkg/errors"
	"github.com/sirupsen/logrus"
)

// Config configures a Server. Its zero value serves plain TCP, without a
// token, within the default Limits.
type Config struct {
	Limits Limits
	// TLS, if set, makes every connection TLS (ServerTLS builds it); a
	// client that does not complete the handshake within
	// tlsHandshakeTimeout is dropped.
	TLS *tls.Config
	// Token, if set, is the shared token each connection must present with
	// Authenticate before any other call.
	Token string
	Log   logrus.FieldLogger // default logrus.StandardLogger()
	// Warnings logs the warnings a client can cause (a connection over
	// the limit, a request too large, a refused token), rate-limited so
	// that no client grows the log without bound: the leader sets the
	// job's limiter (internal/ratelog). Nil logs every one.
	Warnings Warnings
}

// Warnings logs a warning of the port, or holds it back (a rate limiter).
type Warnings interface {
	Log(log logrus.FieldLogger, level logrus.Level, fields logrus.Fields, msg string)
}

// everyWarning is the Warnings of a Config that sets none.
type everyWarning struct{}

func (everyWarning) Log(log logrus.FieldLogger, level logrus.Level, fields logrus.Fields, msg string) {
	log.WithFields(fields).Log(level, msg)
}

// Server serves the receivers registered with it on a listener. What it
// promises: one goroutine per connection and one per call in flight,
// within Limits whatever a client sends (requests.go); Serve keeps
// accepting through accept errors that pass and returns the others; Close
// waits for every connection it accepted.
type Server struct {
	cfg      Config
	gate     *tokenGate
	log      logrus.FieldLogger
	warnings Warnings    // the connection-level warnings (trainerConn.warn)
	rpc      *rpc.Server // the registered receivers and authReceiver, shared by every connection
	// decoderIdle is how long a gob connection waits for its next request
	// before it gives its decoder back: decoderIdle (gobtypes.go), but in
	// tests.
	decoderIdle time.Duration

	// mu guards the fields below. Registration ends when Serve starts:
	// connections read services and listeners without it.
	mu        sync.Mutex
	services  map[string]bool // the names registered
	listeners []Listener
	lastID    uint64                    // the number of the last connection tracked
	lis       net.Listener              // set by Serve
	closed    chan struct{}             // closed by Close
	conns     map[*trainerConn]struct{} // nil once closed
	wg        sync.WaitGroup            // one per connection in conns, added under mu
}

// NewServer returns a Server configured by cfg, serving nothing until
// receivers are registered.
func NewServer(cfg Config) (*Server, error) {
	limits, err := cfg.Limits.withDefaults()
	if err != nil {
		return nil, err
	}
	cfg.Limits = limits
	if cfg.Log == nil {
		cfg.Log = logrus.StandardLogger()
	}
	if cfg.TLS != nil {
		cfg.TLS = cfg.TLS.Clone()
	}
	if cfg.Warnings == nil {
		cfg.Warnings = everyWarning{}
	}
	sv := &Server{cfg: cfg, gate: newTokenGate(cfg.Token), log: cfg.Log, warnings: cfg.Warnings,
		rpc: rpc.NewServer(), decoderIdle: decoderIdle, services: map[string]bool{}, closed: make(chan struct{}), conns: map[*trainerConn]struct{}{}}
	if err := sv.rpc.RegisterName(authService, authReceiver{}); err != nil {
		return nil, errors.Wrap(err, "master: register rpc service")
	}
	return sv, nil
}

// Register serves the methods of rcvr under name, by net/rpc's rules
// (rpc.Server.RegisterName), and has l, unless nil, hear of every
// connection. Register before Serve.
func (sv *Server) Register(name string, rcvr any, l Listener) error {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	if sv.lis != nil || sv.conns == nil {
		return errors.Errorf("master: register %s on a port serving or closed", name)
	}
	if err := sv.rpc.RegisterName(name, rcvr); err != nil {
		return errors.Wrap(err, "master: register rpc service")
	}
	sv.services[name] = true
	if l != nil {
		sv.listeners = append(sv.listeners, l)
	}
	return nil
}

var (
	errServerClosed = errors.New("master: server closed")
	errTooManyConns = errors.New("master: connection limit reached")
)

// track adds c to the connections Close waits for, within MaxConns. The
// WaitGroup is added to under the same lock Close takes the connections
// under, so Close never misses one.
func (sv *Server) track(c *trainerConn) error {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	switch {
	case sv.conns == nil:
		return errServerClosed
	case len(sv.conns) >= sv.cfg.Limits.MaxConns:
		return errTooManyConns
	}
	sv.lastID++
	c.id = sv.lastID
	sv.conns[c] = struct{}{}
	sv.wg.Add(1)
	return nil
}

func (sv *Server) untrack(c *trainerConn) {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	delete(sv.conns, c)
}

// closeGrace bounds how long Close waits for the replies of calls in flight.
const closeGrace = 2 * time.Second

// Close stops accepting and ends every connection, waiting up to closeGrace
// for the replies of calls already in flight: a deposed master's last
// callers hear why it stopped rather than see the connection drop. It may
// be called more than once.
func (sv *Server) Close() {
	conns := sv.shut()
	for c := range conns {
		c.stopReading() // the calls in flight send their replies, then the connection closes
	}
	if !waitFor(&sv.wg, closeGrace) {
		for c := range conns {
			c.raw.Close()
		}
		sv.wg.Wait()
	}
}

// shut closes the listener and takes the connections; later ones are
// refused by track.
func (sv *Server) shut() map[*trainerConn]struct{} {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	if sv.conns == nil {
		return nil
	}
	close(sv.closed)
	if sv.lis != nil {
		sv.lis.Close()
	}
	conns := sv.conns
	sv.conns = nil
	return conns
}

// waitFor waits for wg up to limit, and says whether it finished.
func waitFor(wg *sync.WaitGroup, limit time.Duration) bool {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return true
	case <-time.After(limit):
		return false
	}
}
