package trainerport_test

import (
	"net"
	"net/rpc"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/pkg/errors"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/trainerport"
	"github.com/trainmaster/master/internal/trainerport/porttest"
)

// flaky is a listener whose first failures accepts fail with err.
type flaky struct {
	net.Listener
	failures atomic.Int64
	err      error
}

func (l *flaky) Accept() (net.Conn, error) {
	if l.failures.Add(-1) >= 0 {
		return nil, l.err
	}
	return l.Listener.Accept()
}

// TestAcceptRetriesErrorsThatPass: accept errors that pass by themselves
// (the process out of file descriptors, a connection aborted) are waited
// out with backoff, logged when they start and when they end, and not on
// every retry; the master then serves again.
func TestAcceptRetriesErrorsThatPass(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ECONNABORTED} {
		t.Run(errno.Error(), func(t *testing.T) {
			lis, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			fl := &flaky{Listener: lis, err: &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", errno)}}
			fl.failures.Store(8) // 5ms, 10ms, ... 640ms: about 1.3 s
			p := startPortOn(t, trainerport.Config{}, fl)
			if err := porttest.StatusWithin(p.Addr, 10*time.Second); err != nil {
				t.Fatalf("not served after the accept errors: %v", err)
			}
			p.Log.Await(t, "accepting trainer connections again", 1, 5*time.Second)
			if n := p.Log.Count("cannot accept trainer connections"); n != 1 {
				t.Errorf("%d warnings for one run of accept errors, want 1:\n%s", n, p.Log)
			}
			if !strings.Contains(p.Log.String(), "failures=8") || !strings.Contains(p.Log.String(), errno.Error()) {
				t.Errorf("the log does not say what failed and how often:\n%s", p.Log)
			}
		})
	}
}

// TestServeReturnsFatalAcceptErrors: an accept error that does not pass
// ends Serve with it, for the caller to stop serving.
func TestServeReturnsFatalAcceptErrors(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	fl := &flaky{Listener: lis, err: errors.New("device gone")}
	fl.failures.Store(1)
	srv, err := trainerport.NewServer(trainerport.Config{Log: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if err := srv.Serve(fl); err == nil || !strings.Contains(err.Error(), "device gone") {
		t.Fatalf("Serve returned %v", err)
	}
}

// TestConnectionLimit: over MaxConns a new connection is closed at once,
// with one warning however many come; once one ends, a new one is served.
func TestConnectionLimit(t *testing.T) {
	p := startPort(t, trainerport.Config{Limits: trainerport.Limits{MaxConns: 2}})
	var held []*rpc.Client
	for range 2 {
		c, err := rpc.Dial("tcp", p.Addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var st wire.Status
		if err := c.Call("Master.Status", 0, &st); err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	for range 5 {
		conn, err := net.Dial("tcp", p.Addr)
		if err != nil {
			t.Fatal(err)
		}
		porttest.AwaitClosed(t, conn, 5*time.Second)
		conn.Close()
	}
	if n := p.Log.Count("connection limit reached (-max-conns)"); n != 1 {
		t.Fatalf("%d warnings for 5 refused connections, want 1 (rate limited):\n%s", n, p.Log)
	}
	held[0].Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := porttest.StatusWithin(p.Addr, 10*time.Second)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no connection served after one of the %d ended: %v", 2, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestIdleConnections: a connection with no call in flight that receives
// nothing for IdleTimeout is closed; one whose call takes longer than that
// is not.
func TestIdleConnections(t *testing.T) {
	const idle = 150 * time.Millisecond
	t.Run("idle", func(t *testing.T) {
		p := startPort(t, trainerport.Config{Limits: trainerport.Limits{IdleTimeout: idle}})
		start := time.Now() // before the dial: the master's clock starts when it accepts
		conn, err := net.Dial("tcp", p.Addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		porttest.AwaitClosed(t, conn, 10*time.Second)
		if took := time.Since(start); took < idle {
			t.Fatalf("closed after %v, before the idle timeout %v", took, idle)
		}
		p.Log.Await(t, "closing an idle connection", 1, 5*time.Second)
	})
	t.Run("call in flight", func(t *testing.T) {
		store := newHeld()
		release := store.let
		p := porttest.Start(t, trainerport.Config{Limits: trainerport.Limits{IdleTimeout: idle}}, serving(&receiver{held: store}, nil))
		t.Cleanup(release) // runs before the server's Close, which waits for the call
		c, err := rpc.Dial("tcp", p.Addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var dummy int
		call := c.Go("Master.ReportDataset", []string{"pattern"}, &dummy, nil)
		<-store.entered
		// Another connection, opened now and idle, is closed once the idle
		// timeout has passed for the call's connection too.
		clock, err := net.Dial("tcp", p.Addr)
		if err != nil {
			t.Fatal(err)
		}
		defer clock.Close()
		porttest.AwaitClosed(t, clock, 10*time.Second)
		p.Log.Await(t, "closing an idle connection", 1, 5*time.Second)
		release()
		if err := porttest.Within(call, 10*time.Second); err != nil {
			t.Fatalf("a call longer than the idle timeout: %v", err)
		}
		if n := p.Log.Count("closing an idle connection"); n != 1 {
			t.Fatalf("a connection with a call in flight was closed as idle:\n%s", p.Log)
		}
	})
}

// TestCloseWaitsForEveryConnection: Close returns only once every
// connection it accepted has been served to its end, even one accepted
// while Close runs. Under -race it also catches the WaitGroup added to
// outside the lock Close takes the connections under, while Close waits.
func TestCloseWaitsForEveryConnection(t *testing.T) {
	for range 100 {
		opened := make(chan struct{}, 1)
		srv, err := trainerport.NewServer(trainerport.Config{Log: quietLog()})
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Register(wire.ServiceName, &receiver{}, openings(opened)); err != nil {
			t.Fatal(err)
		}
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		served := make(chan error, 1)
		go func() { served <- srv.Serve(lis) }()
		stop := dialLoop(lis.Addr().String(), 4)
		awaitOpened(t, opened)
		srv.Close()
		if n := servingGoroutines(); n > 0 {
			t.Fatalf("%d connections still served after Close returned", n)
		}
		stop()
		if err := <-served; err != nil {
			t.Fatal(err)
		}
	}
}

// openings is a Listener that signals on its channel when a connection
// is served.
type openings chan struct{}

func (o openings) ConnOpened(uint64, string) {
	select {
	case o <- struct{}{}:
	default:
	}
}
func (o openings) ConnCarries(uint64, string)  {}
func (o openings) ConnClosed(uint64, []string) {}

// awaitOpened waits until the server serves a connection.
func awaitOpened(t *testing.T, opened <-chan struct{}) {
	t.Helper()
	select {
	case <-opened:
	case <-time.After(5 * time.Second):
		t.Fatal("no connection accepted in 5 s")
	}
}

// dialLoop connects to addr from n goroutines, over and over, until the
// returned function is called.
func dialLoop(addr string, n int) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				if c, err := net.Dial("tcp", addr); err == nil {
					c.Close()
				}
			}
		}()
	}
	return func() { close(done); wg.Wait() }
}

// servingGoroutines counts the goroutines serving a connection, before
// they have closed it.
func servingGoroutines() int {
	return goroutinesIn("trainerport.(*Server).serveConn", "trainerport.(*trainerConn).serveNext")
}

// goroutinesIn counts the goroutines with any of frames on their stacks.
func goroutinesIn(frames ...string) int {
	buf := make([]byte, 8<<20)
	n := 0
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if slices.ContainsFunc(frames, func(f string) bool { return strings.Contains(g, f) }) {
			n++
		}
	}
	return n
}

// BenchmarkConnectLoopback measures what a connection costs the port on
// top of its calls (accept, the codec, the first call's type descriptions,
// teardown): each iteration dials, calls Status once and hangs up.
func BenchmarkConnectLoopback(b *testing.B) {
	lis := porttest.Listen(b)
	addr := lis.Addr().String()
	porttest.Serve(b, trainerport.Config{Log: quietLog()}, lis, serving(&receiver{}, nil))
	b.ResetTimer()
	for range b.N {
		if err := porttest.StatusWithin(addr, 10*time.Second); err != nil {
			b.Fatal(err)
		}
	}
}
