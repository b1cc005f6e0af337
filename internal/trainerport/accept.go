package trainerport

import (
	"net"
	"net/rpc"
	"syscall"
	"time"

	"github.com/pkg/errors"
	"github.com/sirupsen/logrus"
)

// Serve accepts connections on lis until Close, and then returns nil.
//
// An accept error that passes by itself (out of file descriptors, out of
// buffers, a connection aborted before it was accepted, a timeout) is
// waited out: accepting is retried after 5ms, then after twice as long each
// time up to 1s, with one warning when the errors start and one line when
// accepting works again. Any other accept error, or the listener closed by
// anyone but Close, is returned at once: the port is dead and the caller
// must stop serving (the leader ends its term and resigns).
func (sv *Server) Serve(lis net.Listener) error {
	if !sv.setListener(lis) {
		lis.Close()
		return nil
	}
	var out acceptOutage
	for {
		conn, err := lis.Accept()
		if err == nil {
			out.over(sv.log)
			sv.admit(conn)
			continue
		}
		if sv.isClosed() {
			return nil
		}
		if !temporaryAcceptError(err) {
			return errors.Wrap(err, "master: accept")
		}
		if !sv.pause(out.failed(err, sv.log)) {
			return nil
		}
	}
}

func (sv *Server) setListener(lis net.Listener) bool {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	if sv.conns == nil {
		return false
	}
	sv.lis = lis
	return true
}

func (sv *Server) isClosed() bool {
	select {
	case <-sv.closed:
		return true
	default:
		return false
	}
}

// pause waits d, and says false if Close was called meanwhile.
func (sv *Server) pause(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-sv.closed:
		return false
	}
}

// The waits between accept retries.
const (
	acceptRetryMin = 5 * time.Millisecond
	acceptRetryMax = time.Second
)

// acceptOutage is a run of accept errors that pass: it computes the waits
// and logs its start and its end, not every retry.
type acceptOutage struct {
	since    time.Time
	failures int
	delay    time.Duration
}

// failed counts err and returns how long to wait before accepting again.
func (o *acceptOutage) failed(err error, log logrus.FieldLogger) time.Duration {
	if o.failures == 0 {
		o.since, o.delay = time.Now(), acceptRetryMin
		log.WithError(err).Warnf("cannot accept trainer connections; retrying every %v to %v until it works", acceptRetryMin, acceptRetryMax)
	} else {
		o.delay = min(2*o.delay, acceptRetryMax)
	}
	o.failures++
	return o.delay
}

// over logs the end of the outage, if there was one.
func (o *acceptOutage) over(log logrus.FieldLogger) {
	if o.failures == 0 {
		return
	}
	log.WithFields(logrus.Fields{"failures": o.failures, "after": time.Since(o.since).Round(time.Millisecond).String()}).
		Info("accepting trainer connections again")
	*o = acceptOutage{}
}

// temporaryAcceptError says whether an accept error passes by itself: the
// listener is fine, the process or the connection was not.
func temporaryAcceptError(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	for _, errno := range []syscall.Errno{
		syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM,
		syscall.ECONNABORTED, syscall.ECONNRESET, syscall.EPROTO, syscall.EPERM,
		syscall.EINTR, syscall.EAGAIN,
	} {
		if errors.Is(err, errno) {
			return true
		}
	}
	return false
}

// admit serves a new connection, unless the server is closed or at
// MaxConns: then it is closed at once.
func (sv *Server) admit(raw net.Conn) {
	c := newTrainerConn(raw, sv)
	if err := sv.track(c); err != nil {
		raw.Close()
		if errors.Is(err, errTooManyConns) {
			c.warn("connection limit reached (-max-conns): closing new connections until one ends", logrus.Fields{"max_conns": sv.cfg.Limits.MaxConns})
		}
		return
	}
	go sv.serveConn(c)
}

// serveConn serves one tracked connection: the TLS handshake, if any,
// then its requests (requests.go).
func (sv *Server) serveConn(c *trainerConn) {
	c.opened()
	c.watchIdle(sv.cfg.Limits.IdleTimeout)
	if sv.cfg.TLS != nil {
		if err := c.secure(sv.cfg.TLS); err != nil {
			c.warn("refused a trainer connection: TLS handshake failed", logrus.Fields{"error": err.Error()})
			c.end()
			return
		}
	}
	c.in = newConnReader(c.rw)
	c.readNext() // in a goroutine of its own: the handshake's stack is left behind
}

// codec is the codec of c, within the limits, for a client whose first
// byte is first: JSON-RPC when it opens a JSON object, gob otherwise
// (json.go).
func (sv *Server) codec(c *trainerConn, first byte) *limitedCodec {
	var codec rpc.ServerCodec
	if first == jsonOpening {
		codec = newJSONCodec(c.in, c.rw, sv.cfg.Limits.MaxRequestBytes)
	} else {
		codec = newGobCodec(newGobFrames(c.in, sv.cfg.Limits.MaxRequestBytes), c.rw)
	}
	lc := newLimitedCodec(codec, c, sv.cfg.Limits.MaxInflight)
	lc.bodyRead = c.readNext
	return lc
}
