package master

import (
	"context"
	"crypto/tls"
	"net"
	"net/rpc"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trainmaster/master/go/client"
	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/etcdembed/etcdtest"
)

// trainAll consumes every record of the dataset at pattern through a
// go/client configured by cfg, and returns how many it got.
func trainAll(t *testing.T, addr, pattern string, cfg client.Config) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := client.New(client.Static(addr), cfg)
	defer c.Close()
	if err := c.ReportDataset(ctx, []string{pattern}); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, err := range c.Records(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}

// finalWithin checks that a go/client configured by cfg gives up on its
// first call with an error containing want, at once rather than retrying
// until its context ends, having resolved the master once.
func finalWithin(t *testing.T, addr string, cfg client.Config, want string) {
	t.Helper()
	var resolves atomic.Int64
	c := client.New(client.ResolverFunc(func(context.Context) (string, error) {
		resolves.Add(1)
		return addr, nil
	}), cfg)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	_, err := c.GetTask(ctx, wire.Task{})
	if err == nil || !strings.Contains(err.Error(), want) || ctx.Err() != nil {
		t.Fatalf("GetTask answered %v after %v; want a final error containing %q", err, time.Since(start), want)
	}
	if n := resolves.Load(); n != 1 {
		t.Fatalf("%d resolves: the client retried a final refusal", n)
	}
}

// TestTLSPort: with TLS, a trainer trusting the CA trains the whole job; a
// plain TCP client, and with a client CA a client without a certificate,
// are refused, and go/client gives up on such a refusal instead of
// retrying it.
func TestTLSPort(t *testing.T) {
	certs := etcdtest.GenerateCerts(t)
	pattern := writeDataset(t, t.TempDir(), 2, 3)
	for _, tc := range []struct {
		name     string
		clientCA string
	}{
		{"server certificate", ""},
		{"client certificates required", certs.CAFile},
	} {
		t.Run(tc.name, func(t *testing.T) {
			serverTLS, err := ServerTLS(certs.ServerCert, certs.ServerKey, tc.clientCA)
			if err != nil {
				t.Fatal(err)
			}
			s, _ := newService(t, Config{ChunksPerTask: 1})
			p := startPort(t, s, ServerConfig{TLS: serverTLS})
			if n := trainAll(t, p.addr, pattern, client.Config{TLS: etcdtest.ClientTLS(t, certs)}); n != 18 {
				t.Fatalf("%d records over TLS, want 18", n)
			}
			if err := statusCall(p.addr); err == nil || !strings.Contains(err.Error(), "this port speaks TLS") {
				t.Fatalf("a plain TCP client was answered %v", err)
			}
			p.log.await(t, "refused a trainer connection: TLS handshake failed", 1, 5*time.Second)
			finalWithin(t, p.addr, client.Config{}, "this port speaks TLS")
			finalWithin(t, p.addr, client.Config{TLS: &tls.Config{}}, "certificate signed by unknown authority")
			if tc.clientCA == "" {
				return
			}
			conn, err := tls.Dial("tcp", p.addr, etcdtest.ClientTLSNoCert(t, certs))
			if err == nil {
				var st wire.Status
				err = rpc.NewClient(conn).Call("Master.Status", 0, &st)
				conn.Close()
			}
			if err == nil {
				t.Fatal("a client without a certificate was served")
			}
			finalWithin(t, p.addr, client.Config{TLS: etcdtest.ClientTLSNoCert(t, certs)}, "certificate required")
		})
	}
}

// TestTokenPort: with a token, a connection must authenticate before any
// other call; a call before that, or a wrong token, is answered "not
// authenticated" and the connection closed, with one log line naming the
// remote address and never the token. Without a token Authenticate is
// harmless.
func TestTokenPort(t *testing.T) {
	const token = "s3cret-T0ken"
	pattern := writeDataset(t, t.TempDir(), 2, 3)
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
			s, _ := newService(t, Config{ChunksPerTask: 1})
			p := startPort(t, s, ServerConfig{Token: tc.token})
			conn, err := net.Dial("tcp", p.addr)
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
			p.log.await(t, "refused a trainer connection: not authenticated", 1, 5*time.Second)
			if strings.Contains(p.log.String(), token) || !strings.Contains(p.log.String(), conn.LocalAddr().String()) {
				t.Fatalf("the log names the token or not the remote address:\n%s", p.log)
			}
		})
	}
	t.Run("go/client", func(t *testing.T) {
		s, _ := newService(t, Config{ChunksPerTask: 1})
		p := startPort(t, s, ServerConfig{Token: token})
		if n := trainAll(t, p.addr, pattern, client.Config{Token: token}); n != 18 {
			t.Fatalf("%d records with the token, want 18", n)
		}
		finalWithin(t, p.addr, client.Config{Token: "guess"}, wire.TextUnauthorized)
		finalWithin(t, p.addr, client.Config{}, wire.TextUnauthorized)
		if strings.Contains(p.log.String(), token) {
			t.Fatal("the token appears in the log")
		}
	})
}

func ptr[T any](v T) *T { return &v }

// TestReadToken reads tokens from files.
func TestReadToken(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		content, want, err string
	}{
		{"s3cret\n", "s3cret", ""},
		{"  two words \r\n", "two words", ""},
		{"\n \n", "", "is empty"},
	} {
		path := filepath.Join(dir, "token")
		if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := ReadToken(path)
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%q: %q, %v; want %q, %q", tc.content, got, err, tc.want, tc.err)
		}
	}
	if _, err := ReadToken(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing file gave a token")
	}
}
