package trainerport_test

import (
	"crypto/tls"
	"net/rpc"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/etcdembed/etcdtest"
	"github.com/trainmaster/master/internal/trainerport"
	"github.com/trainmaster/master/internal/trainerport/porttest"
)

// progressLog is a Master that records the trainers its TaskProgress
// calls name.
type progressLog struct {
	mu    sync.Mutex // guards names
	names []string
}

func (r *progressLog) Status(_ int, reply *wire.Status) error { return nil }

func (r *progressLog) TaskProgress(p wire.Progress, reply *wire.ProgressReply) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.names = append(r.names, p.Trainer)
	return nil
}

func (r *progressLog) reached() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.names)
}

// TestNamesBoundToCertificates: over mutual TLS a call may name a trainer
// only by its client certificate's common name ("client"), or by it and
// "-" or "/" and anything; a call naming another is answered "not
// authenticated" with the rule, reaches no receiver, carries no name, and
// the connection is closed after it, with one log line. Without client
// certificates any name passes.
func TestNamesBoundToCertificates(t *testing.T) {
	certs := etcdtest.GenerateCerts(t)
	if etcdtest.ClientCommonName != "client" {
		t.Fatalf("the test certificate's common name is %q", etcdtest.ClientCommonName)
	}
	for _, tc := range []struct {
		name    string
		mutual  bool // the port wants client certificates
		trainer string
		refused bool
	}{
		{"the common name", true, "client", false},
		{"common name and dash", true, "client-4242-9f3c", false},
		{"common name and slash", true, "client/gpu0", false},
		{"no name", true, "", false},
		{"another name", true, "victim-1", true},
		{"a longer common name", true, "clientele", true},
		{"the common name inside", true, "x-client", true},
		{"unnamed is no name", true, wire.Unnamed, false},
		{"no client certificates", false, "victim-1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clientCA, clientTLS := "", etcdtest.ClientTLSNoCert(t, certs)
			if tc.mutual {
				clientCA, clientTLS = certs.CAFile, etcdtest.ClientTLS(t, certs)
			}
			heard, master := &events{}, &progressLog{}
			p := porttest.Start(t, trainerport.Config{TLS: porttest.TLS(t, certs.ServerCert, certs.ServerKey, clientCA)},
				func(srv *trainerport.Server) error { return srv.Register(wire.ServiceName, master, heard) })
			conn, err := tls.Dial("tcp", p.Addr, clientTLS)
			if err != nil {
				t.Fatal(err)
			}
			c := rpc.NewClient(conn)
			defer c.Close()
			err = c.Call("Master.TaskProgress", wire.Progress{Trainer: tc.trainer}, new(wire.ProgressReply))
			if !tc.refused {
				if err != nil {
					t.Fatal(err)
				}
				if err := c.Call("Master.Status", 0, new(wire.Status)); err != nil {
					t.Fatalf("after a name that passed: %v", err)
				}
				if got := master.reached(); !slices.Equal(got, []string{tc.trainer}) {
					t.Fatalf("the receiver heard %q, want %q", got, tc.trainer)
				}
				return
			}
			const rule = `is not bound to this connection's client certificate (common name "client"): ` +
				`with -tls-client-ca a trainer's name must be its certificate's common name, or begin with it followed by "-" or "/"`
			if !wire.Is(err, wire.TextUnauthorized) || !strings.Contains(err.Error(), `trainer name "`+tc.trainer+`" `+rule) {
				t.Fatalf("answered %v, want %q and the rule", err, wire.TextUnauthorized)
			}
			if err := c.Call("Master.Status", 0, new(wire.Status)); err == nil {
				t.Fatal("after the refusal the connection served a call")
			}
			p.Log.Await(t, "refused a trainer connection: not authenticated", 1, 5*time.Second)
			c.Close()
			p.Server.Close()
			if got := master.reached(); len(got) != 0 {
				t.Fatalf("the refused call reached the receiver: %q", got)
			}
			if got := heard.lines(); !slices.Equal(got, []string{"opened", "closed "}) {
				t.Fatalf("the listener heard %q: a refused name counted as carried", got)
			}
		})
	}
}
