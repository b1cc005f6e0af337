package master

import (
	"context"
	"crypto/tls"
	"net/rpc"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trainmaster/master/go/client"
	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/etcdembed/etcdtest"
	"github.com/trainmaster/master/internal/trainerport"
	"github.com/trainmaster/master/internal/trainerport/porttest"
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
			serverTLS := porttest.TLS(t, certs.ServerCert, certs.ServerKey, tc.clientCA)
			s, _ := newService(t, Config{ChunksPerTask: 1})
			p := startPort(t, s, trainerport.Config{TLS: serverTLS})
			if n := trainAll(t, p.addr, pattern, client.Config{TLS: etcdtest.ClientTLS(t, certs)}); n != 18 {
				t.Fatalf("%d records over TLS, want 18", n)
			}
			if err := statusCall(p.addr); err == nil || !strings.Contains(err.Error(), "this port speaks TLS") {
				t.Fatalf("a plain TCP client was answered %v", err)
			}
			p.log.Await(t, "refused a trainer connection: TLS handshake failed", 1, 5*time.Second)
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

// TestTokenPortClient: go/client trains the whole job with the token,
// and gives up at once without it or with a wrong one; the token never
// appears in the log (the port's TestTokenPort covers each call).
func TestTokenPortClient(t *testing.T) {
	const token = "s3cret-T0ken"
	pattern := writeDataset(t, t.TempDir(), 2, 3)
	s, _ := newService(t, Config{ChunksPerTask: 1})
	p := startPort(t, s, trainerport.Config{Token: token})
	if n := trainAll(t, p.addr, pattern, client.Config{Token: token}); n != 18 {
		t.Fatalf("%d records with the token, want 18", n)
	}
	finalWithin(t, p.addr, client.Config{Token: "guess"}, wire.TextUnauthorized)
	finalWithin(t, p.addr, client.Config{}, wire.TextUnauthorized)
	if strings.Contains(p.log.String(), token) {
		t.Fatal("the token appears in the log")
	}
}
