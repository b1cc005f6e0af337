package clienttest

import (
	"io"
	"net"
	"testing"
)

// FrozenMaster returns the loopback address of a master that accepts
// connections, reads every call and answers none, as a master stopped with
// SIGSTOP does: its connections stay open. It stops with the test.
func FrozenMaster(t testing.TB) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lis.Close() })
	go func() {
		for {
			conn, err := lis.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				io.Copy(io.Discard, conn)
			}()
		}
	}()
	return lis.Addr().String()
}
