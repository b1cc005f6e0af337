package master

import (
	"context"
	"crypto/tls"
	"net"
	"net/rpc"
	"sync"
	"time"

	"github.com/pkg/errors"
	"github.com/sirupsen/logrus"

	"github.com/trainmaster/master/go/wire"
)

// rpcService adapts a Service to net/rpc for one connection: its method set
// is exactly the wire contract, and with a token configured it refuses
// every call but Authenticate until the connection has authenticated
// (server_auth.go).
type rpcService struct {
	s    *Service
	conn *trainerConn
	gate *tokenGate // nil: no token
}

func (r *rpcService) ReportDataset(paths []string, reply *int) error {
	if err := r.admit("ReportDataset"); err != nil {
		return err
	}
	return r.s.ReportDataset(context.Background(), paths)
}

// TaskReport is what the master decodes of a task a trainer sends: the
// fields of wire.Task it acts on, without Blocks. gob skips a field the
// receiving type lacks without building it, so blocks a client sends (each
// one byte on the wire, 40 in memory) cost the master nothing.
type TaskReport struct {
	Index, Epoch, Pass int
	Error              string
	Trainer            string
	Dataset            string
}

func (t TaskReport) task() wire.Task {
	return wire.Task{Index: t.Index, Epoch: t.Epoch, Pass: t.Pass, Error: t.Error, Trainer: wire.TrainerName(t.Trainer), Dataset: t.Dataset}
}

func (r *rpcService) GetTask(finished TaskReport, reply *wire.Task) error {
	if err := r.admit("GetTask"); err != nil {
		return err
	}
	t := finished.task()
	r.conn.carries(t.Trainer)
	next, err := r.s.GetTask(context.Background(), t)
	*reply = next
	return err
}

func (r *rpcService) TaskFinished(task TaskReport, reply *int) error {
	if err := r.admit("TaskFinished"); err != nil {
		return err
	}
	t := task.task()
	r.conn.carries(t.Trainer)
	rep, err := r.s.TaskFinished(context.Background(), t)
	*reply = int(rep)
	return err
}

func (r *rpcService) TaskFailed(task TaskReport, reply *int) error {
	if err := r.admit("TaskFailed"); err != nil {
		return err
	}
	t := task.task()
	r.conn.carries(t.Trainer)
	rep, err := r.s.TaskFailed(context.Background(), t)
	*reply = int(rep)
	return err
}

func (r *rpcService) TaskProgress(p wire.Progress, reply *wire.ProgressReply) error {
	if err := r.admit("TaskProgress"); err != nil {
		return err
	}
	p.Trainer = wire.TrainerName(p.Trainer)
	r.conn.carries(p.Trainer)
	rep, err := r.s.TaskProgress(context.Background(), p)
	*reply = rep
	return err
}

func (r *rpcService) DeclareDataset(d wire.Dataset, reply *int) error {
	if err := r.admit("DeclareDataset"); err != nil {
		return err
	}
	return r.s.DeclareDataset(context.Background(), d)
}

func (r *rpcService) StartRound(round wire.Round, reply *int) error {
	if err := r.admit("StartRound"); err != nil {
		return err
	}
	cur, err := r.s.StartRound(context.Background(), round)
	*reply = cur
	return err
}

func (r *rpcService) DatasetStatus(name string, reply *wire.Status) error {
	if err := r.admit("DatasetStatus"); err != nil {
		return err
	}
	st, err := r.s.DatasetStatus(context.Background(), name)
	*reply = st
	return err
}

func (r *rpcService) Status(_ int, reply *wire.Status) error {
	if err := r.admit("Status"); err != nil {
		return err
	}
	st, err := r.s.Status(context.Background())
	*reply = st
	return err
}

// ServerConfig configures a Server. Its zero value serves plain TCP,
// without a token, within the default Limits.
type ServerConfig struct {
	Limits Limits
	// TLS, if set, makes every connection TLS (ServerTLS builds it from
	// files); a client that does not complete the handshake within
	// tlsHandshakeTimeout is dropped.
	TLS *tls.Config
	// Token, if set, is the shared token each connection must present with
	// Master.Authenticate before any other call.
	Token string
	Log   logrus.FieldLogger // default logrus.StandardLogger()
}

// Server serves a Service over net/rpc (gob) on a listener. What it
// promises: one goroutine and one net/rpc server per connection, within
// Limits whatever a client sends; Serve keeps accepting through accept
// errors that pass and returns the others; Close waits for every
// connection it accepted.
type Server struct {
	svc      *Service
	cfg      ServerConfig
	gate     *tokenGate
	log      logrus.FieldLogger
	warnings *rateLog

	mu     sync.Mutex
	lis    net.Listener
	closed chan struct{}             // closed by Close
	conns  map[*trainerConn]struct{} // nil once closed
	wg     sync.WaitGroup            // one per connection in conns, added under mu
}

// NewServer returns a Server of s with the default configuration.
func NewServer(s *Service, log logrus.FieldLogger) (*Server, error) {
	return NewServerWith(s, ServerConfig{Log: log})
}

// NewServerWith returns a Server of s configured by cfg.
func NewServerWith(s *Service, cfg ServerConfig) (*Server, error) {
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
	sv := &Server{svc: s, cfg: cfg, gate: newTokenGate(cfg.Token), log: cfg.Log,
		warnings: newRateLog(cfg.Log, warnInterval), closed: make(chan struct{}), conns: map[*trainerConn]struct{}{}}
	if _, err := sv.rpcServer(nil); err != nil { // fail here rather than on every connection
		return nil, err
	}
	return sv, nil
}

// rpcServer returns a net/rpc server of the contract bound to c.
func (sv *Server) rpcServer(c *trainerConn) (*rpc.Server, error) {
	srv := rpc.NewServer()
	if err := srv.RegisterName(wire.ServiceName, &rpcService{s: sv.svc, conn: c, gate: sv.gate}); err != nil {
		return nil, errors.Wrap(err, "master: register rpc service")
	}
	return srv, nil
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
		c.stopReading() // net/rpc sends the pending replies, then closes
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
