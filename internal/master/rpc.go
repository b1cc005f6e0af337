package master

import (
	"context"
	"net"
	"net/rpc"
	"sync"
	"time"

	"github.com/pkg/errors"
	"github.com/sirupsen/logrus"

	"github.com/trainmaster/master/go/wire"
)

// rpcService adapts a Service to net/rpc: its method set is exactly the wire
// contract.
type rpcService struct{ s *Service }

func (r rpcService) ReportDataset(paths []string, reply *int) error {
	return r.s.ReportDataset(context.Background(), paths)
}

func (r rpcService) GetTask(finished wire.Task, reply *wire.Task) error {
	t, err := r.s.GetTask(context.Background(), finished)
	*reply = t
	return err
}

func (r rpcService) TaskFinished(task wire.Task, reply *int) error {
	rep, err := r.s.TaskFinished(context.Background(), task)
	*reply = int(rep)
	return err
}

func (r rpcService) TaskFailed(task wire.Task, reply *int) error {
	rep, err := r.s.TaskFailed(context.Background(), task)
	*reply = int(rep)
	return err
}

func (r rpcService) Status(_ int, reply *wire.Status) error {
	*reply = r.s.Status()
	return nil
}

// Server serves a Service over net/rpc on a listener, one rpc.ServeConn per
// accepted connection.
type Server struct {
	rpc *rpc.Server
	log logrus.FieldLogger

	mu    sync.Mutex
	lis   net.Listener
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// NewServer registers the service under wire.ServiceName.
func NewServer(s *Service, log logrus.FieldLogger) (*Server, error) {
	srv := rpc.NewServer()
	if err := srv.RegisterName(wire.ServiceName, rpcService{s}); err != nil {
		return nil, errors.Wrap(err, "master: register rpc service")
	}
	return &Server{rpc: srv, log: log, conns: map[net.Conn]struct{}{}}, nil
}

// Serve accepts connections until the listener is closed (by Close); it
// then returns nil.
func (sv *Server) Serve(lis net.Listener) error {
	sv.mu.Lock()
	sv.lis = lis
	sv.mu.Unlock()
	for {
		conn, err := lis.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return errors.Wrap(err, "master: accept")
		}
		if !sv.track(conn) {
			conn.Close()
			return nil
		}
		sv.wg.Add(1)
		go func() {
			defer sv.wg.Done()
			defer sv.untrack(conn)
			sv.rpc.ServeConn(conn) // returns on EOF or on bytes that are not gob
		}()
	}
}

func (sv *Server) track(conn net.Conn) bool {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	if sv.conns == nil {
		return false
	}
	sv.conns[conn] = struct{}{}
	return true
}

func (sv *Server) untrack(conn net.Conn) {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	delete(sv.conns, conn)
}

// closeGrace bounds how long Close waits for the replies of calls in flight.
const closeGrace = 2 * time.Second

// Close stops accepting and ends every connection, waiting up to closeGrace
// for the replies of calls already in flight: a deposed master's last
// callers hear why it stopped rather than see the connection drop.
func (sv *Server) Close() {
	sv.mu.Lock()
	if sv.lis != nil {
		sv.lis.Close()
	}
	conns := sv.conns
	sv.conns = nil
	sv.mu.Unlock()
	for c := range conns {
		// net/rpc stops reading at EOF, then sends the pending replies
		// before it closes the connection.
		if tcp, ok := c.(*net.TCPConn); !ok || tcp.CloseRead() != nil {
			c.Close()
		}
	}
	done := make(chan struct{})
	go func() {
		sv.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(closeGrace):
		for c := range conns {
			c.Close()
		}
		<-done
	}
}
