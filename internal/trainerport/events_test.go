package trainerport_test

import (
	"net/rpc"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/trainerport"
	"github.com/trainmaster/master/internal/trainerport/porttest"
)

// events records what a Listener hears, one line per event.
type events struct {
	mu   sync.Mutex // guards seen
	seen []string
}

func (e *events) add(line string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.seen = append(e.seen, line)
}

func (e *events) lines() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.seen)
}

func (e *events) ConnOpened(conn uint64, remote string)   { e.add("opened") }
func (e *events) ConnCarries(conn uint64, trainer string) { e.add("carries " + trainer) }
func (e *events) ConnClosed(conn uint64, trainers []string) {
	e.add("closed " + strings.Join(trainers, ","))
}

// TestListenerEvents: a connection is opened, carries each trainer name
// its calls' arguments give once, at most MaxNamesPerConn of them (no name
// and Unnamed are none), and is closed with the names it carried, once its
// calls are answered.
func TestListenerEvents(t *testing.T) {
	heard := &events{}
	p := porttest.Start(t, trainerport.Config{}, serving(&receiver{}, heard))
	c, err := rpc.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"", wire.Unnamed, "a", "b", "a", "c", "d", "e"} {
		if err := c.Call("Master.TaskProgress", wire.Progress{Trainer: name}, new(wire.ProgressReply)); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Call("Master.Status", 0, new(wire.Status)); err != nil {
		t.Fatal(err)
	}
	c.Close()
	p.Server.Close()
	want := []string{"opened", "carries a", "carries b", "carries c", "carries d", "closed a,b,c,d"}
	if got := heard.lines(); !slices.Equal(got, want) {
		t.Fatalf("heard %q, want %q", got, want)
	}
}

// TestTwoServicesOnOnePort: a second receiver registered under its own
// name is served on the same port, behind the same token: Authenticate on
// either name authenticates the connection for both, and a call of either
// before it is refused, naming its service.
func TestTwoServicesOnOnePort(t *testing.T) {
	const token = "tw0-T0ken"
	register := func(srv *trainerport.Server) error {
		if err := srv.Register(wire.ServiceName, &receiver{}, nil); err != nil {
			return err
		}
		return srv.Register("Rendezvous", &receiver{}, nil)
	}
	p := porttest.Start(t, trainerport.Config{Token: token}, register)
	dial := func() *rpc.Client {
		c, err := rpc.Dial("tcp", p.Addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	err := dial().Call("Rendezvous.Status", 0, new(wire.Status))
	if want := "master: Rendezvous.Status called before Rendezvous.Authenticate on a master that requires a token: " + wire.TextUnauthorized; err == nil || err.Error() != want {
		t.Fatalf("a call before Authenticate answered %v, want %q", err, want)
	}
	for _, auth := range []string{"Master", "Rendezvous"} {
		c := dial()
		if err := c.Call(auth+".Authenticate", token, new(int)); err != nil {
			t.Fatal(err)
		}
		for _, call := range []string{"Master.Status", "Rendezvous.Status"} {
			if err := c.Call(call, 0, new(wire.Status)); err != nil {
				t.Fatalf("%s after %s.Authenticate: %v", call, auth, err)
			}
		}
	}
	if err := dial().Call("Nobody.Authenticate", token, new(int)); err == nil || err.Error() != "rpc: can't find service Nobody.Authenticate" {
		t.Fatalf("Authenticate on a service not registered answered %v", err)
	}
}

// TestRefusalTexts: the answers of a refused connection, word for word.
func TestRefusalTexts(t *testing.T) {
	p := startPort(t, trainerport.Config{Token: "right"})
	for _, tc := range []struct {
		method string
		arg    any
		want   string
	}{
		{"Master.Status", 0, "master: Master.Status called before Master.Authenticate on a master that requires a token: " + wire.TextUnauthorized},
		{"Master.Authenticate", "wrong", "master: wrong token: " + wire.TextUnauthorized},
	} {
		c, err := rpc.Dial("tcp", p.Addr)
		if err != nil {
			t.Fatal(err)
		}
		err = c.Call(tc.method, tc.arg, new(wire.Status))
		c.Close()
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s answered %v, want %q", tc.method, err, tc.want)
		}
	}
}
