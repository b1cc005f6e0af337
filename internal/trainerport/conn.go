package trainerport

import (
	"context"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pkg/errors"
	"github.com/sirupsen/logrus"
)

// trainerConn is one accepted connection and what its layers share: the
// calls in flight and the time of the last byte received (for the idle
// timer), and the switch that stops reading it. Stopping is graceful:
// nothing more is read, the calls already read get their replies, then
// the connection's last goroutine closes it (requests.go).
type trainerConn struct {
	raw    net.Conn // as accepted
	rw     net.Conn // what the codec reads and writes: raw, or TLS over it
	sv     *Server
	id     uint64 // set by Server.track
	remote string

	life context.Context // ends when the connection is stopped
	stop context.CancelFunc

	born     time.Time    // the monotonic origin of lastRecv
	lastRecv atomic.Int64 // nanoseconds after born of the last byte received or reply sent
	calls    atomic.Int64 // calls read and not yet answered
	idleMu   sync.Mutex   // guards idle
	idle     *time.Timer  // nil without an idle timeout

	// Owned by the connection's reading goroutine: one at a time, each
	// starting the next (requests.go).
	in            *connReader   // set once the handshake, if any, is done
	codec         *limitedCodec // chosen by the first byte received
	authenticated bool
	names         []string // trainer names its calls carried, at most MaxNamesPerConn

	serving atomic.Int32 // the goroutines serving the connection (requests.go)

	// Set by secure, before the first request is read: the client's
	// verified certificate, if any, binds the trainer names its calls may
	// carry (names.go).
	certified  bool
	commonName string
}

func newTrainerConn(raw net.Conn, sv *Server) *trainerConn {
	life, stop := context.WithCancel(context.Background())
	c := &trainerConn{raw: raw, sv: sv, remote: raw.RemoteAddr().String(), life: life, stop: stop, born: time.Now()}
	c.rw = receiving{Conn: raw, c: c}
	return c
}

// receiving is the raw connection, noting when bytes arrive.
type receiving struct {
	net.Conn
	c *trainerConn
}

func (r receiving) Read(p []byte) (int, error) {
	n, err := r.Conn.Read(p)
	if n > 0 {
		r.c.touch()
	}
	return n, err
}

func (c *trainerConn) touch() { c.lastRecv.Store(int64(time.Since(c.born))) }

// aLongTimeAgo is a read deadline that has passed: it wakes a blocked Read.
var aLongTimeAgo = time.Unix(1, 0)

// stopReading stops the connection gracefully (see trainerConn).
func (c *trainerConn) stopReading() {
	c.stop()
	c.raw.SetReadDeadline(aLongTimeAgo)
}

// close ends the connection at once.
func (c *trainerConn) close() {
	c.stop()
	c.stopIdle()
	c.rw.Close()
	c.raw.Close()
}

// watchIdle starts the idle timer: the connection is stopped once it has
// had no call in flight and received no byte for timeout.
func (c *trainerConn) watchIdle(timeout time.Duration) {
	if timeout <= 0 {
		return
	}
	c.touch()
	c.idleMu.Lock()
	defer c.idleMu.Unlock()
	c.idle = time.AfterFunc(timeout, func() { c.checkIdle(timeout) })
}

func (c *trainerConn) checkIdle(timeout time.Duration) {
	if c.calls.Load() > 0 {
		c.rearmIdle(timeout)
		return
	}
	quiet := time.Since(c.born) - time.Duration(c.lastRecv.Load())
	if quiet < timeout {
		c.rearmIdle(timeout - quiet)
		return
	}
	c.sv.log.WithFields(logrus.Fields{"remote": c.remote, "idle": quiet.Round(time.Millisecond).String()}).
		Debug("closing an idle connection (-idle-timeout)")
	c.stopReading()
}

// rearmIdle sets the idle timer to fire in d, unless the connection is
// stopped: a closed connection leaves no timer holding it.
func (c *trainerConn) rearmIdle(d time.Duration) {
	c.idleMu.Lock()
	defer c.idleMu.Unlock()
	if c.life.Err() == nil {
		c.idle.Reset(d)
	}
}

func (c *trainerConn) stopIdle() {
	c.idleMu.Lock()
	defer c.idleMu.Unlock()
	if c.idle != nil {
		c.idle.Stop()
	}
}

func (c *trainerConn) callStarted() { c.calls.Add(1) }

func (c *trainerConn) callEnded() {
	c.touch()
	c.calls.Add(-1)
}

// headerFailed logs why a request header could not be read, unless the
// connection simply ended, and returns the error that ends the connection.
func (c *trainerConn) headerFailed(err error) error {
	var tooLarge *RequestTooLargeError
	switch {
	case err == nil:
	case c.life.Err() != nil, errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
	case errors.As(err, &tooLarge):
		c.warn("closing a connection: request header over -max-request-bytes", logrus.Fields{"bytes": tooLarge.Size, "limit": tooLarge.Limit})
	case errors.Is(err, errUnframed):
		c.warn("closing a connection: not a gob stream", nil)
	case errors.Is(err, errJSONTooLarge):
		c.warn("closing a connection: JSON-RPC request over -max-request-bytes", logrus.Fields{"limit": c.sv.cfg.Limits.MaxRequestBytes})
	default:
		c.sv.log.WithFields(logrus.Fields{"remote": c.remote, "error": err.Error()}).Debug("closing a connection: cannot read a request")
	}
	return err
}

// warn logs a connection-level warning with the remote address, through
// Config.Warnings.
func (c *trainerConn) warn(msg string, fields logrus.Fields) {
	if fields == nil {
		fields = logrus.Fields{}
	}
	fields["remote"] = c.remote
	c.sv.warnings.Log(c.sv.log, logrus.WarnLevel, fields, msg)
}

// refuse stops the connection because it failed to authenticate, logging
// one line for it, and returns err, the answer to the call that was
// refused.
func (c *trainerConn) refuse(err error) error {
	c.warn("refused a trainer connection: not authenticated", logrus.Fields{"reason": err.Error()})
	c.stopReading()
	return err
}
