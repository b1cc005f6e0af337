// Package mastertest serves a master.Service on a loopback port for the
// tests of other packages: the real net/rpc server, closed when the test
// ends.
package mastertest

import (
	"net"
	"testing"

	"github.com/trainmaster/master/internal/master"
)

// Serve serves svc with cfg on 127.0.0.1 and returns the address. The
// server is closed, and Serve's error checked, when the test ends.
func Serve(t testing.TB, svc *master.Service, cfg master.ServerConfig) string {
	t.Helper()
	srv, err := master.NewServerWith(svc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	t.Cleanup(func() {
		srv.Close()
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return lis.Addr().String()
}
