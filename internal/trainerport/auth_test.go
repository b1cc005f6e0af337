package trainerport_test

import (
	"crypto/tls"
	"net"
	"net/rpc"
	"net/rpc/jsonrpc"
	"strings"
	"testing"
	"time"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/etcdembed/etcdtest"
	"github.com/trainmaster/master/internal/trainerport"
	"github.com/trainmaster/master/internal/trainerport/porttest"
)

// TestTokenPort: with a token, a connection must authenticate before any
// other call; a call before that, or a wrong token, is answered "not
// authenticated" and the connection closed, with one log line naming the
// remote address and never the token. Without a token Authenticate is
// harmless.
func TestTokenPort(t *testing.T) {
	const token = "s3cret-T0ken"
	for _, tc := range []struct {
		name      string
		token     string // the master's
		present   *string
		wantError bool
	}{
		{"no token, none presented", "", nil, false},
		{"no token, one presented", "", ptr("anything"), false},
		{"call before Authenticate", token, nil, true},
		{"wrong token", token, ptr("guess"), true},
		{"right token", token, ptr(token), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := startPort(t, trainerport.Config{Token: tc.token})
			conn, err := net.Dial("tcp", p.Addr)
			if err != nil {
				t.Fatal(err)
			}
			c := rpc.NewClient(conn)
			defer c.Close()
			var dummy int
			if tc.present != nil {
				err = c.Call("Master.Authenticate", *tc.present, &dummy)
			}
			if err == nil {
				var st wire.Status
				err = c.Call("Master.Status", 0, &st)
			}
			if !tc.wantError {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !wire.Is(err, wire.TextUnauthorized) {
				t.Fatalf("answered %v, want %q", err, wire.TextUnauthorized)
			}
			// The connection is closed; a call the master read before the
			// close took effect is refused like the first.
			var st wire.Status
			if err := c.Call("Master.Status", 0, &st); err == nil {
				t.Fatal("after the refusal the connection served a call")
			}
			p.Log.Await(t, "refused a trainer connection: not authenticated", 1, 5*time.Second)
			if strings.Contains(p.Log.String(), token) || !strings.Contains(p.Log.String(), conn.LocalAddr().String()) {
				t.Fatalf("the log names the token or not the remote address:\n%s", p.Log)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// TestJSONWithinTheLocks: the token, TLS and the request size limit apply
// to JSON-RPC as to gob; a JSON request over the limit closes its
// connection, and the port goes on serving.
func TestJSONWithinTheLocks(t *testing.T) {
	const token = "j50n-T0ken"
	certs := etcdtest.GenerateCerts(t)
	serverTLS := porttest.TLS(t, certs.ServerCert, certs.ServerKey, "")
	p := startPort(t, trainerport.Config{TLS: serverTLS, Token: token, Limits: trainerport.Limits{MaxRequestBytes: 4 << 10}})
	dial := func() *rpc.Client {
		conn, err := tls.Dial("tcp", p.Addr, etcdtest.ClientTLSNoCert(t, certs))
		if err != nil {
			t.Fatal(err)
		}
		return jsonrpc.NewClient(conn)
	}
	plain := porttest.JSONSession(t, p.Addr, `{"method":"Master.Status","params":[0],"id":1}`)
	if e, _ := plain[0]["error"].(string); !strings.Contains(e, "this port speaks TLS") {
		t.Fatalf("a plain JSON client on the TLS port was answered %v", plain[0])
	}
	c := dial()
	var st wire.Status
	if err := c.Call("Master.Status", 0, &st); err == nil || !strings.Contains(err.Error(), wire.TextUnauthorized) {
		t.Fatalf("a JSON call before Authenticate answered %v", err)
	}
	c.Close()
	c = dial()
	defer c.Close()
	if err := c.Call("Master.Authenticate", token, new(int)); err != nil {
		t.Fatal(err)
	}
	if err := c.Call("Master.Status", 0, &st); err != nil {
		t.Fatalf("a JSON call after Authenticate over TLS: %v", err)
	}
	err := c.Call("Master.ReportDataset", []string{strings.Repeat("p", 8<<10)}, new(int))
	if err == nil {
		t.Fatal("a JSON request over the size limit was answered")
	}
	p.Log.Await(t, "closing a connection: JSON-RPC request over -max-request-bytes", 1, 5*time.Second)
	again := dial()
	defer again.Close()
	if err := again.Call("Master.Authenticate", token, new(int)); err != nil {
		t.Fatalf("the port after a request over the limit: %v", err)
	}
}
