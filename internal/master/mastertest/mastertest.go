// Package mastertest serves a master.Service on a loopback port for the
// tests of other packages: the real trainer port, closed when the test
// ends.
package mastertest

import (
	"testing"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/master"
	"github.com/trainmaster/master/internal/trainerport"
	"github.com/trainmaster/master/internal/trainerport/porttest"
)

// Serve serves svc with cfg on 127.0.0.1 and returns the address. The
// server is closed, and Serve's error checked, when the test ends.
func Serve(t testing.TB, svc *master.Service, cfg trainerport.Config) string {
	t.Helper()
	lis := porttest.Listen(t)
	porttest.Serve(t, cfg, lis, func(srv *trainerport.Server) error { return Register(srv, svc) })
	return lis.Addr().String()
}

// Register serves svc on srv as the master's leader does: the Master
// service, following the connections, and the Rendezvous service.
func Register(srv *trainerport.Server, svc *master.Service) error {
	if err := srv.Register(wire.ServiceName, master.NewReceiver(svc), master.NewConnections(svc)); err != nil {
		return err
	}
	return srv.Register(wire.RendezvousServiceName, master.NewRendezvousReceiver(svc), nil)
}
