package client

import (
	"context"
	"crypto/tls"
	"math/rand/v2"
	"net"
	"net/rpc"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/pkg/errors"

	"github.com/trainmaster/master/go/wire"
)

// ErrClosed is returned by calls on a Client after Close, and yielded by a
// Records loop that Close interrupts.
var ErrClosed = errors.New("client: closed")

// Client talks to the master on behalf of one trainer. It connects lazily,
// on the first call, and keeps one connection that its calls share. Its
// methods are safe for concurrent use.
type Client struct {
	res Resolver
	cfg Config
	// followsMaster: Config.ProgressInterval was left 0, so that progress
	// is reported as often as each task asks (wire.Task.ProgressMillis).
	followsMaster bool

	life  context.Context // ends when Close is called
	close context.CancelCauseFunc

	causes sync.Map // *rpc.Client -> *readRecorder, for every open connection

	trained trained // what the loops trained that the master may not know (checkpoint.go)

	asks atomic.Int64 // the number of the last GetTask (wire.Task.Ask), from a random start

	mu   sync.Mutex
	conn *rpc.Client // nil when not connected
	addr string      // the address conn was dialled at
	// What was reported (ReportDataset) and declared (Declare, one per
	// name), to report again to a master that lost it.
	dataset  []string
	declared []wire.Dataset
}

// New returns a Client that finds the master with r. It does not connect
// until the first call.
func New(r Resolver, cfg Config) *Client {
	life, cancel := context.WithCancelCause(context.Background())
	c := &Client{res: r, cfg: cfg.withDefaults(), followsMaster: cfg.ProgressInterval == 0, life: life, close: cancel}
	c.asks.Store(rand.Int64N(1 << 62)) // a restarted trainer of the same name asks anew
	return c
}

// Close drops the connection and ends every call and Records loop in
// progress; those loops yield ErrClosed. It is safe to call more than once.
func (c *Client) Close() error {
	c.close(ErrClosed)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == nil {
		return nil
	}
	err := c.closeConn(c.conn)
	c.conn = nil
	if errors.Is(err, rpc.ErrShutdown) {
		err = nil // already broken; nothing left to release
	}
	return err
}

// bind returns a context that also ends, with cause ErrClosed, when the
// client is closed.
func (c *Client) bind(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(c.life, func() { cancel(ErrClosed) })
	return ctx, func() { stop(); cancel(context.Canceled) }
}

// connect returns the current connection, dialing the resolved master when
// there is none.
func (c *Client) connect(ctx context.Context) (*rpc.Client, error) {
	if rc := c.current(); rc != nil {
		return rc, nil
	}
	addr, err := c.res.Resolve(ctx)
	if err != nil {
		return nil, &connError{op: "resolve master", err: err}
	}
	rc, err := c.open(ctx, addr)
	if err != nil {
		return nil, err
	}
	return c.adopt(rc, addr)
}

// current returns the connection, nil when there is none.
func (c *Client) current() *rpc.Client {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.conn
}

// open dials addr, in TLS when configured, and presents the token when one
// is configured.
func (c *Client) open(ctx context.Context, addr string) (*rpc.Client, error) {
	nc, err := c.dial(ctx, addr)
	switch {
	case err != nil && refusedTLS(err):
		return nil, errors.WithMessagef(err, "dial master %s", addr)
	case err != nil:
		return nil, &connError{op: "dial master " + addr, err: err}
	}
	rec := &readRecorder{Conn: nc}
	rc := rpc.NewClient(rec)
	c.causes.Store(rc, rec)
	if err := c.authenticate(ctx, rc); err != nil {
		c.closeConn(rc)
		return nil, err
	}
	return rc, nil
}

// closeConn closes rc and forgets why reading it failed.
func (c *Client) closeConn(rc *rpc.Client) error {
	c.causes.Delete(rc)
	return rc.Close()
}

// readRecorder is a connection that remembers why reading it failed:
// net/rpc answers a call made after its connection broke with
// rpc.ErrShutdown alone, and the cause (say, a TLS alert refusing this
// client's certificate, which TLS 1.3 delivers after the handshake, often
// before the first call is sent) decides whether the call is retried.
type readRecorder struct {
	net.Conn
	mu  sync.Mutex
	err error
}

func (r *readRecorder) Read(p []byte) (int, error) {
	n, err := r.Conn.Read(p)
	if err != nil {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.err == nil {
			r.err = err
		}
	}
	return n, err
}

// shutdownCause adds to rpc.ErrShutdown why reading rc failed, if it did.
func (c *Client) shutdownCause(rc *rpc.Client, err error) error {
	v, ok := c.causes.Load(rc)
	if !ok || !errors.Is(err, rpc.ErrShutdown) {
		return err
	}
	rec := v.(*readRecorder)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.err == nil {
		return err
	}
	return wire.WithKind(err, rec.err)
}

func (c *Client) dial(ctx context.Context, addr string) (net.Conn, error) {
	d := &net.Dialer{Timeout: c.cfg.DialTimeout}
	if c.cfg.TLS == nil {
		return d.DialContext(ctx, "tcp", addr)
	}
	td := tls.Dialer{NetDialer: d, Config: c.cfg.TLS} // the timeout covers the handshake
	return td.DialContext(ctx, "tcp", addr)
}

// authenticate presents the token on a new connection, when one is
// configured, and waits for the answer: a refusal is final.
func (c *Client) authenticate(ctx context.Context, rc *rpc.Client) error {
	if c.cfg.Token == "" {
		return nil
	}
	var reply int
	err := c.invoke(ctx, rc, "Authenticate", c.cfg.Token, &reply)
	var ce *connError
	if err != nil && !errors.As(err, &ce) && ctx.Err() == nil {
		return errors.WithMessagef(err, "%s.Authenticate", wire.ServiceName)
	}
	return err
}

// adopt makes rc the connection, unless another call connected first (rc
// is closed and that one shared) or the client was closed.
func (c *Client) adopt(rc *rpc.Client, addr string) (*rpc.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.life.Err() != nil:
		c.closeConn(rc)
		return nil, ErrClosed
	case c.conn != nil:
		c.closeConn(rc)
		return c.conn, nil
	}
	c.conn, c.addr = rc, addr
	c.cfg.Log.WithField("master", addr).Debug("client: connected")
	return rc, nil
}

// drop closes rc and forgets it if it is still the current connection, so
// that the next call resolves and dials again.
func (c *Client) drop(rc *rpc.Client) {
	c.forget(rc)
	c.closeConn(rc)
}

func (c *Client) forget(rc *rpc.Client) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == rc {
		c.conn = nil
	}
}

func (c *Client) setDataset(paths []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dataset = slices.Clone(paths)
}

// setDeclared remembers d in place of an earlier declaration of its name.
func (c *Client) setDeclared(d wire.Dataset) {
	d.Patterns = slices.Clone(d.Patterns)
	name := wire.DatasetName(d.Name)
	c.mu.Lock()
	defer c.mu.Unlock()
	i := slices.IndexFunc(c.declared, func(o wire.Dataset) bool { return wire.DatasetName(o.Name) == name })
	if i < 0 {
		c.declared = append(c.declared, d)
		return
	}
	c.declared[i] = d
}

// reported returns what was last reported and declared.
func (c *Client) reported() (paths []string, declared []wire.Dataset) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dataset, slices.Clone(c.declared)
}
