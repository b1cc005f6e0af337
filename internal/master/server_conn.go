package master

import (
	"context"
	"crypto/tls"
	"encoding/gob"
	"encoding/json"
	"io"
	"net"
	"net/rpc"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pkg/errors"
	"github.com/sirupsen/logrus"
)

// trainerConn is one accepted connection and what its layers share: the
// calls in flight and the time of the last byte received (for the idle
// timer), whether it has authenticated, and the switch that stops reading
// it. Stopping is graceful: nothing more is read, the calls already read
// get their replies, then net/rpc closes the connection.
type trainerConn struct {
	raw    net.Conn // as accepted
	rw     net.Conn // what the codec reads and writes: raw, or TLS over it
	sv     *Server
	remote string

	life context.Context // ends when the connection is stopped
	stop context.CancelFunc

	born     time.Time    // the monotonic origin of lastRecv
	lastRecv atomic.Int64 // nanoseconds after born of the last byte received or reply sent
	calls    atomic.Int64 // calls read and not yet answered
	idleMu   sync.Mutex
	idle     *time.Timer // nil without an idle timeout

	authenticated atomic.Bool
	refuseOnce    sync.Once

	namesMu sync.Mutex
	names   []string // trainer names its calls carried, at most maxNamesPerConn
}

// maxNamesPerConn bounds the trainer names one connection is followed for
// (presence.go): a trainer sends one; a client that sends more is only
// followed for its first ones.
const maxNamesPerConn = 4

// carries notes that a call on c carried trainer's name (wire.TrainerName
// applied), and tells the service when it is a new one.
func (c *trainerConn) carries(trainer string) {
	if c == nil || !named(trainer) {
		return
	}
	c.namesMu.Lock()
	defer c.namesMu.Unlock()
	if len(c.names) >= maxNamesPerConn || slices.Contains(c.names, trainer) {
		return
	}
	c.names = append(c.names, trainer)
	c.sv.svc.Connected(trainer)
}

// forgetNames tells the service that c no longer carries its names.
func (c *trainerConn) forgetNames() {
	c.namesMu.Lock()
	defer c.namesMu.Unlock()
	for _, trainer := range c.names {
		c.sv.svc.Disconnected(trainer)
	}
	c.names = nil
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

// secure runs the TLS handshake, within tlsHandshakeTimeout and until the
// connection is stopped.
func (c *trainerConn) secure(cfg *tls.Config) error {
	tc := tls.Server(c.rw, cfg)
	ctx, cancel := context.WithTimeout(c.life, tlsHandshakeTimeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		answerPlain(err)
		lingerBeforeClose(c.raw)
		return errors.Wrap(err, "master: TLS handshake")
	}
	c.rw = tc
	return nil
}

// lingerBeforeClose ends the sending side of a refused connection, then
// reads and drops what the client still sends, for up to a second, until
// it hangs up. Closing a socket with unread bytes makes the kernel send a
// reset, which can reach the client before the TLS alert saying why it was
// refused: the client would see "connection reset" and retry instead of
// stopping with "certificate required".
func lingerBeforeClose(conn net.Conn) {
	if cw, ok := conn.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	conn.SetReadDeadline(time.Now().Add(time.Second))
	io.Copy(io.Discard, io.LimitReader(conn, 1<<20))
}

// plainOnTLS is what a client that does not speak TLS is told on a TLS port.
const plainOnTLS = "master: this port speaks TLS and this client does not: give it the CA of the master's certificate (go/client: Config.TLS; cmd/trainer: -tls-ca)"

// answerPlain answers a client that sent plain bytes to the TLS port, when
// they may be a net/rpc call: with an error reply to its first call (a new
// gob client numbers it 0; a JSON reply has no id, the request's being
// unread), so that it says why instead of retrying a connection that ends.
func answerPlain(err error) {
	var plain tls.RecordHeaderError
	if !errors.As(err, &plain) || plain.Conn == nil {
		return
	}
	plain.Conn.SetWriteDeadline(time.Now().Add(time.Second))
	if plain.RecordHeader[0] == jsonOpening {
		json.NewEncoder(plain.Conn).Encode(map[string]any{"id": nil, "result": nil, "error": plainOnTLS})
		return
	}
	enc := gob.NewEncoder(plain.Conn)
	if enc.Encode(rpc.Response{Seq: 0, Error: plainOnTLS}) == nil {
		enc.Encode(struct{}{})
	}
}

// headerFailed logs why a request header could not be read, unless the
// connection simply ended, and returns the error that ends the connection.
func (c *trainerConn) headerFailed(err error) error {
	var tooLarge *RequestTooLargeError
	switch {
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

// warn logs a connection-level warning with the remote address, rate
// limited (rateLog).
func (c *trainerConn) warn(msg string, fields logrus.Fields) {
	if fields == nil {
		fields = logrus.Fields{}
	}
	fields["remote"] = c.remote
	c.sv.warnings.Warn(msg, fields)
}

// refuse stops the connection because it failed to authenticate, logging
// one line for it, and returns err, the answer to the call that was
// refused.
func (c *trainerConn) refuse(err error) error {
	c.refuseOnce.Do(func() {
		c.warn("refused a trainer connection: not authenticated", logrus.Fields{"reason": err.Error()})
		c.stopReading()
	})
	return err
}
