package main

import (
	"context"
	"crypto/tls"
	"net/rpc"
	"strings"
	"testing"
	"time"

	"github.com/trainmaster/master/go/client"
	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/etcdembed/etcdtest"
)

// TestHostileNamesUnderMutualTLS: on a master started with -tls-client-ca,
// a client whose certificate is another's (common name "localhost") cannot
// keep a gone trainer's name ("client-victim", of the certificate
// "client") present: each call under that name is answered "not
// authenticated" with the rule, and the gone trainer's task is back in Todo
// once -trainer-grace has passed, not at its timeout (10 minutes). Under
// its own name the same client is served, and a trainer with a
// certificate and no name is named after the certificate and served.
func TestHostileNamesUnderMutualTLS(t *testing.T) {
	certs := etcdtest.GenerateCerts(t)
	const grace = 2 * time.Second
	p, addr := startOnEtcd(t, "-tls-cert", certs.ServerCert, "-tls-key", certs.ServerKey, "-tls-client-ca", certs.CAFile,
		"-dataset", writeDataset(t, 1), "-chunks-per-task", "1",
		"-task-timeout", "10m", "-task-timeout-min", "5m", "-trainer-grace", grace.String())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	victim := client.New(client.Static(addr), client.Config{TLS: etcdtest.ClientTLS(t, certs), Name: "client-victim"})
	held, err := victim.GetTask(ctx, wire.Task{})
	if err != nil {
		t.Fatal(err)
	}
	victim.Close()
	gone := time.Now()

	// The intruder holds a certificate the CA signed for another name.
	intruderTLS := etcdtest.ClientTLSNoCert(t, certs)
	cert, err := tls.LoadX509KeyPair(certs.ServerCert, certs.ServerKey)
	if err != nil {
		t.Fatal(err)
	}
	intruderTLS.Certificates = []tls.Certificate{cert}
	for {
		err := callTLS(addr, intruderTLS, "Master.GetTask", wire.Task{Trainer: "client-victim"}, new(wire.Task))
		if !wire.Is(err, wire.TextUnauthorized) || !strings.Contains(err.Error(),
			`trainer name "client-victim" is not bound to this connection's client certificate (common name "localhost")`) {
			t.Fatalf("a call under another certificate's trainer name was answered %v", err)
		}
		st, err := tlsStatus(addr, intruderTLS)
		if err != nil {
			t.Fatal(err)
		}
		if st.Pending == 0 {
			break
		}
		if time.Since(gone) > 30*time.Second {
			t.Fatalf("%d tasks pending 30 s after the trainer left (grace %v): its name is held", st.Pending, grace)
		}
	}
	t.Logf("the gone trainer's task was back in todo %v after it left (grace %v)", time.Since(gone).Round(time.Millisecond), grace)
	p.awaitLog("trainer lost", 10*time.Second)
	if log := p.logText(); !strings.Contains(log, "trainer=client-victim") || !strings.Contains(log, "refused a trainer connection: not authenticated") {
		t.Fatalf("the log does not say the victim was lost and the intruder refused:\n%s", lastLines(log, 30))
	}

	own := client.New(client.Static(addr), client.Config{TLS: intruderTLS, Name: "localhost/0"})
	defer own.Close()
	if task, err := own.GetTask(ctx, wire.Task{}); err != nil || task.Index != held.Index {
		t.Fatalf("under its own name the client got %+v, %v; want the gone trainer's task %d, first in todo", task, err, held.Index)
	}
	unnamed := client.New(client.Static(addr), client.Config{TLS: etcdtest.ClientTLS(t, certs)})
	defer unnamed.Close()
	if _, err := unnamed.GetTask(ctx, wire.Task{}); err != nil {
		t.Fatalf("a trainer named after its certificate by default: %v", err)
	}
}

// callTLS makes one call on a new TLS connection to addr.
func callTLS(addr string, cfg *tls.Config, method string, args, reply any) error {
	conn, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		return err
	}
	c := rpc.NewClient(conn)
	defer c.Close()
	return c.Call(method, args, reply)
}

// tlsStatus is the master's Status over TLS.
func tlsStatus(addr string, cfg *tls.Config) (wire.Status, error) {
	var st wire.Status
	err := callTLS(addr, cfg, "Master.Status", 0, &st)
	return st, err
}
