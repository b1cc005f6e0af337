package master

import (
	"github.com/trainmaster/master/go/wire"
	"net"
	"net/rpc"
	"testing"
	"time"

	"github.com/trainmaster/master/internal/trainerport"
	"github.com/trainmaster/master/internal/trainerport/porttest"
)

// port is the trainer port serving a Service under test on a loopback
// port, with its log.
type port struct {
	addr string
	srv  *trainerport.Server
	log  *porttest.Log
}

// serving registers s on the port as the master does.
func serving(s *Service) func(*trainerport.Server) error {
	return func(srv *trainerport.Server) error {
		if err := srv.Register(wire.ServiceName, NewReceiver(s), NewConnections(s)); err != nil {
			return err
		}
		return srv.Register(wire.RendezvousServiceName, NewRendezvousReceiver(s), nil)
	}
}

// startPort serves s with cfg (its Log replaced) on a new loopback port.
func startPort(t *testing.T, s *Service, cfg trainerport.Config) *port {
	t.Helper()
	p := porttest.Start(t, cfg, serving(s))
	return &port{addr: p.Addr, srv: p.Server, log: p.Log}
}

// serveOn serves s with cfg on lis until the test ends; Serve must then
// return nil.
func serveOn(t testing.TB, s *Service, cfg trainerport.Config, lis net.Listener) *trainerport.Server {
	t.Helper()
	return porttest.Serve(t, cfg, lis, serving(s))
}

func listenLoopback(t testing.TB) net.Listener { return porttest.Listen(t) }

func statusCall(addr string) error { return porttest.StatusWithin(addr, 10*time.Second) }

func within(call *rpc.Call, limit time.Duration) error { return porttest.Within(call, limit) }
