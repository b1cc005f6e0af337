package master

import (
	"bytes"
	"context"
	"encoding/gob"
	"fmt"
	"net"
	"net/rpc"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/pkg/errors"

	"github.com/trainmaster/master/go/client"
	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/dataset"
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
			s, _ := newService(t, Config{ChunksPerTask: 1})
			p := startPortOn(t, s, ServerConfig{}, fl)
			if err := statusWithin(p.addr, 10*time.Second); err != nil {
				t.Fatalf("not served after the accept errors: %v", err)
			}
			p.log.await(t, "accepting trainer connections again", 1, 5*time.Second)
			if n := p.log.count("cannot accept trainer connections"); n != 1 {
				t.Errorf("%d warnings for one run of accept errors, want 1:\n%s", n, p.log)
			}
			if !strings.Contains(p.log.String(), "failures=8") || !strings.Contains(p.log.String(), errno.Error()) {
				t.Errorf("the log does not say what failed and how often:\n%s", p.log)
			}
		})
	}
}

// TestAcceptErrorsThatPass sorts accept errors into those to wait out and
// those that end serving.
func TestAcceptErrorsThatPass(t *testing.T) {
	opErr := func(err error) error { return &net.OpError{Op: "accept", Net: "tcp", Err: err} }
	for _, tc := range []struct {
		err   error
		temps bool
	}{
		{opErr(os.NewSyscallError("accept4", syscall.EMFILE)), true},
		{opErr(os.NewSyscallError("accept4", syscall.ENFILE)), true},
		{opErr(os.NewSyscallError("accept4", syscall.ECONNABORTED)), true},
		{opErr(os.NewSyscallError("accept4", syscall.ENOBUFS)), true},
		{opErr(os.ErrDeadlineExceeded), true},
		{opErr(os.NewSyscallError("accept4", syscall.EBADF)), false},
		{opErr(os.NewSyscallError("accept4", syscall.EINVAL)), false},
		{opErr(net.ErrClosed), false},
		{errors.New("device gone"), false},
	} {
		if got := temporaryAcceptError(tc.err); got != tc.temps {
			t.Errorf("%v: passes %v, want %v", tc.err, got, tc.temps)
		}
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
	s, _ := newService(t, Config{ChunksPerTask: 1})
	srv, err := NewServerWith(s, ServerConfig{Log: quietLog()})
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
	s, _ := newService(t, Config{ChunksPerTask: 1})
	p := startPort(t, s, ServerConfig{Limits: Limits{MaxConns: 2}})
	var held []*rpc.Client
	for range 2 {
		c, err := rpc.Dial("tcp", p.addr)
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
		conn, err := net.Dial("tcp", p.addr)
		if err != nil {
			t.Fatal(err)
		}
		awaitClosed(t, conn, 5*time.Second)
		conn.Close()
	}
	if n := p.log.count("connection limit reached (-max-conns)"); n != 1 {
		t.Fatalf("%d warnings for 5 refused connections, want 1 (rate limited):\n%s", n, p.log)
	}
	held[0].Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := statusCall(p.addr)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no connection served after one of the %d ended: %v", 2, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func statusCall(addr string) error { return statusWithin(addr, 10*time.Second) }

// statusWithin calls Status on a new connection to addr, giving up after
// limit.
func statusWithin(addr string, limit time.Duration) error {
	c, err := rpc.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	return within(c.Go("Master.Status", 0, new(wire.Status), nil), limit)
}

// within waits for call up to limit and returns its error.
func within(call *rpc.Call, limit time.Duration) error {
	select {
	case <-call.Done:
		return call.Error
	case <-time.After(limit):
		return errors.Errorf("%s: no reply in %v", call.ServiceMethod, limit)
	}
}

// heldStore holds SaveDataset until released: a call in flight for as long
// as a test wants.
type heldStore struct {
	*MemoryStore
	entered chan struct{}
	release chan struct{}
}

func (h *heldStore) SaveDataset(ctx context.Context, ds *dataset.Dataset) error {
	h.entered <- struct{}{}
	<-h.release
	return h.MemoryStore.SaveDataset(ctx, ds)
}

// TestIdleConnections: a connection with no call in flight that receives
// nothing for IdleTimeout is closed; one whose call takes longer than that
// is not.
func TestIdleConnections(t *testing.T) {
	const idle = 150 * time.Millisecond
	t.Run("idle", func(t *testing.T) {
		s, _ := newService(t, Config{ChunksPerTask: 1})
		p := startPort(t, s, ServerConfig{Limits: Limits{IdleTimeout: idle}})
		start := time.Now() // before the dial: the master's clock starts when it accepts
		conn, err := net.Dial("tcp", p.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		awaitClosed(t, conn, 10*time.Second)
		if took := time.Since(start); took < idle {
			t.Fatalf("closed after %v, before the idle timeout %v", took, idle)
		}
		p.log.await(t, "closing an idle connection", 1, 5*time.Second)
	})
	t.Run("call in flight", func(t *testing.T) {
		pattern := writeDataset(t, t.TempDir(), 1, 2)
		store := &heldStore{MemoryStore: NewMemoryStore(), entered: make(chan struct{}, 1), release: make(chan struct{})}
		release := sync.OnceFunc(func() { close(store.release) })
		s, _ := newService(t, Config{ChunksPerTask: 1, Store: store})
		p := startPort(t, s, ServerConfig{Limits: Limits{IdleTimeout: idle}})
		t.Cleanup(release) // runs before the server's Close, which waits for the call
		c, err := rpc.Dial("tcp", p.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var dummy int
		call := c.Go("Master.ReportDataset", []string{pattern}, &dummy, nil)
		<-store.entered
		// Another connection, opened now and idle, is closed once the idle
		// timeout has passed for the call's connection too.
		clock, err := net.Dial("tcp", p.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer clock.Close()
		awaitClosed(t, clock, 10*time.Second)
		p.log.await(t, "closing an idle connection", 1, 5*time.Second)
		release()
		if err := within(call, 10*time.Second); err != nil {
			t.Fatalf("a call longer than the idle timeout: %v", err)
		}
		if n := p.log.count("closing an idle connection"); n != 1 {
			t.Fatalf("a connection with a call in flight was closed as idle:\n%s", p.log)
		}
	})
}

// TestClientRidesOutIdleCloses: the master closes a trainer's connection
// while the trainer consumes a task; go/client dials again on its next call
// and the Records loop sees no error.
func TestClientRidesOutIdleCloses(t *testing.T) {
	pattern := writeDataset(t, t.TempDir(), 1, 4)
	s, _ := newService(t, Config{ChunksPerTask: 1})
	p := startPort(t, s, ServerConfig{Limits: Limits{IdleTimeout: 100 * time.Millisecond}})
	var dials atomic.Int64
	c := client.New(client.ResolverFunc(func(context.Context) (string, error) {
		dials.Add(1)
		return p.addr, nil
	}), client.Config{Prefetch: -1, MinBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.ReportDataset(ctx, []string{pattern}); err != nil {
		t.Fatal(err)
	}
	tasks := 0
	for rec, err := range c.Records(ctx) {
		if err != nil {
			t.Fatalf("the loop saw %v", err)
		}
		if !rec.Last {
			continue
		}
		if tasks++; tasks <= 2 && !awaitCount(p.log, "closing an idle connection", tasks, 5*time.Second) {
			break // consumed slowly: the connection idled meanwhile, or the test fails below
		}
	}
	if n := p.log.count("closing an idle connection"); n < 2 {
		t.Fatalf("%d idle connections closed, want 2", n)
	}
	if tasks != 4 {
		t.Fatalf("%d tasks consumed, want 4", tasks)
	}
	if n := dials.Load(); n < 3 {
		t.Fatalf("%d dials, want one more after each idle close", n)
	}
}

// TestRequestSizeLimit: a request argument over MaxRequestBytes is
// answered an error naming its size, the limit and the flag, and the
// connection goes on; a header over it, or bytes that are not gob, close
// the connection with a log line.
func TestRequestSizeLimit(t *testing.T) {
	const limit = 64 << 10
	s, _ := newService(t, Config{ChunksPerTask: 1})
	p := startPort(t, s, ServerConfig{Limits: Limits{MaxRequestBytes: limit}})
	t.Run("argument", func(t *testing.T) {
		c, err := rpc.Dial("tcp", p.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var dummy int
		huge := []string{strings.Repeat("x", 4*limit)}
		for range 3 { // and again: the stream stays in step
			err = c.Call("Master.ReportDataset", huge, &dummy)
			want := fmt.Sprintf("over the limit of %d bytes (the master's -max-request-bytes)", limit)
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "request of 2621") {
				t.Fatalf("ReportDataset of %d bytes answered %v", 4*limit, err)
			}
			var st wire.Status
			if err := c.Call("Master.Status", 0, &st); err != nil {
				t.Fatalf("the connection did not go on: %v", err)
			}
		}
		p.log.await(t, "refused a request over -max-request-bytes", 1, 5*time.Second)
	})
	for _, tc := range []struct {
		name string
		send func(conn net.Conn) error
		log  string
	}{
		{"header", func(conn net.Conn) error {
			return gob.NewEncoder(conn).Encode(rpc.Request{ServiceMethod: strings.Repeat("M", 2*limit), Seq: 1})
		}, "closing a connection: request header over -max-request-bytes"},
		{"not gob", func(conn net.Conn) error {
			_, err := conn.Write([]byte{0x80, 1, 2, 3})
			return err
		}, "closing a connection: not a gob stream"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", p.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			go tc.send(conn) // may fail once the master closes
			awaitClosed(t, conn, 5*time.Second)
			p.log.await(t, tc.log, 1, 5*time.Second)
		})
	}
}

// TestInflightSlotsFreedOncePerRequest: with MaxInflight 2, requests the
// master cannot serve (argument too large, of the wrong type, no such
// method) each free their slot: a good call still goes through after many
// of them, and so do more concurrent calls than there are slots.
func TestInflightSlotsFreedOncePerRequest(t *testing.T) {
	s, _ := newService(t, Config{ChunksPerTask: 1})
	p := startPort(t, s, ServerConfig{Limits: Limits{MaxInflight: 2, MaxRequestBytes: 1 << 10}})
	c, err := rpc.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	bad := []struct {
		method string
		arg    any
	}{
		{"Master.ReportDataset", []string{strings.Repeat("x", 4<<10)}},
		{"Master.GetTask", "not a task"},
		{"Master.NoSuchMethod", 0},
		{"NoSuchService.Status", 0},
	}
	for range 3 {
		for _, b := range bad {
			err := within(c.Go(b.method, b.arg, new(int), nil), 10*time.Second)
			if err == nil || strings.Contains(err.Error(), "no reply in") {
				t.Fatalf("%s(%T) answered %v", b.method, b.arg, err)
			}
		}
	}
	calls := make([]*rpc.Call, 50)
	for i := range calls {
		calls[i] = c.Go("Master.Status", 0, new(wire.Status), nil)
	}
	timeout := time.After(10 * time.Second)
	for i, call := range calls {
		select {
		case <-call.Done:
			if call.Error != nil {
				t.Fatalf("call %d: %v", i, call.Error)
			}
		case <-timeout:
			t.Fatalf("call %d of 50 unanswered: a slot was not freed", i)
		}
	}
}

// TestPipelinedFloodBounded: a client that pipelines calls without reading
// the replies makes the master stop reading it once MaxInflight replies
// wait, instead of starting a goroutine for every request it sends.
func TestPipelinedFloodBounded(t *testing.T) {
	gobFlood := func(flood *bytes.Buffer) {
		enc := gob.NewEncoder(flood)
		for seq := range 400_000 {
			enc.Encode(rpc.Request{ServiceMethod: "Master.Status", Seq: uint64(seq)})
			enc.Encode(0)
		}
	}
	jsonFlood := func(flood *bytes.Buffer) {
		for seq := range 400_000 {
			fmt.Fprintf(flood, `{"method":"Master.Status","params":[0],"id":%d}`+"\n", seq)
		}
	}
	t.Run("gob", func(t *testing.T) { floodBounded(t, gobFlood) })
	t.Run("json", func(t *testing.T) { floodBounded(t, jsonFlood) })
}

// floodBounded sends the calls write encodes on one connection without
// reading the replies, and checks the master stops reading them.
func floodBounded(t *testing.T, write func(*bytes.Buffer)) {
	const inflight = 8
	s, _ := newService(t, Config{ChunksPerTask: 1})
	p := startPort(t, s, ServerConfig{Limits: Limits{MaxInflight: inflight}})
	var flood bytes.Buffer
	write(&flood)
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	conn, err := d.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	before := runtime.NumGoroutine()
	wrote := make(chan error, 1)
	go func() {
		_, err := conn.Write(flood.Bytes())
		wrote <- err
	}()
	peak := peakGoroutines(wrote, 3*time.Second)
	conn.Close()
	t.Logf("%d bytes of pipelined calls; goroutines %d before, at most %d during", flood.Len(), before, peak)
	// At most inflight calls are served at once; the goroutines of calls
	// that have sent their reply and are exiting add a few more.
	if peak > before+inflight+64 {
		t.Fatalf("%d goroutines during the flood, %d before: the master kept reading past %d calls in flight", peak, before, inflight)
	}
}

// peakGoroutines samples the number of goroutines until done delivers or
// limit passes, and returns the highest.
func peakGoroutines(done <-chan error, limit time.Duration) int {
	peak := runtime.NumGoroutine()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	end := time.After(limit)
	for {
		select {
		case <-done:
			return peak
		case <-end:
			return peak
		case <-tick.C:
			peak = max(peak, runtime.NumGoroutine())
		}
	}
}

// TestCloseWaitsForEveryConnection: Close returns only once every
// connection it accepted has been served to its end, even one accepted
// while Close runs. Under -race it also catches the WaitGroup added to
// outside the lock Close takes the connections under, while Close waits.
func TestCloseWaitsForEveryConnection(t *testing.T) {
	s, _ := newService(t, Config{ChunksPerTask: 1})
	for range 100 {
		srv, err := NewServer(s, quietLog())
		if err != nil {
			t.Fatal(err)
		}
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		served := make(chan error, 1)
		go func() { served <- srv.Serve(lis) }()
		stop := dialLoop(lis.Addr().String(), 4)
		awaitTracked(t, srv)
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

// awaitTracked waits until srv serves a connection.
func awaitTracked(t *testing.T, srv *Server) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); srv.tracked() == 0; time.Sleep(100 * time.Microsecond) {
		if time.Now().After(deadline) {
			t.Fatal("no connection accepted in 5 s")
		}
	}
}

func (sv *Server) tracked() int {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	return len(sv.conns)
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
	buf := make([]byte, 8<<20)
	stacks := string(buf[:runtime.Stack(buf, true)])
	n := 0
	for _, g := range strings.Split(stacks, "\n\n") {
		if strings.Contains(g, "net/rpc.(*Server).ServeCodec") || strings.Contains(g, "master.(*Server).Serve.func") {
			n++
		}
	}
	return n
}

// BenchmarkConnectLoopback measures what a connection costs the master on
// top of its calls (accept, a net/rpc server of its own, the first call's
// type descriptions, teardown): each iteration dials, calls Status once and
// hangs up.
func BenchmarkConnectLoopback(b *testing.B) {
	s, err := New(Config{ChunksPerTask: 1, Log: quietLog()})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	addr := startServerB(b, s)
	b.ResetTimer()
	for range b.N {
		if err := statusCall(addr); err != nil {
			b.Fatal(err)
		}
	}
}

// TestReportOverTheLimitsDoesNotWait: while a dataset is being accepted, a
// report over the dataset limits is refused at once instead of waiting,
// held in memory, for the build to end.
func TestReportOverTheLimitsDoesNotWait(t *testing.T) {
	pattern := writeDataset(t, t.TempDir(), 1, 2)
	store := &heldStore{MemoryStore: NewMemoryStore(), entered: make(chan struct{}, 1), release: make(chan struct{})}
	release := sync.OnceFunc(func() { close(store.release) })
	s, _ := newService(t, Config{ChunksPerTask: 1, Store: store})
	p := startPort(t, s, ServerConfig{})
	t.Cleanup(release)
	c, err := rpc.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	building := c.Go("Master.ReportDataset", []string{pattern}, new(int), nil)
	<-store.entered
	over := make([]string, 200000) // empty patterns, over MaxPatterns
	err = within(c.Go("Master.ReportDataset", over, new(int), nil), 10*time.Second)
	if err == nil || !strings.Contains(err.Error(), "more than the limit of 10000 (MaxPatterns)") {
		t.Fatalf("a report over the limits during a build: %v; want refused at once", err)
	}
	release()
	if err := within(building, 10*time.Second); err != nil {
		t.Fatal(err)
	}
}

// TestReportedBlocksAreNotDecoded: blocks a client puts in a task it sends
// back are skipped, not built: 900,000 of them, one byte each on the wire
// (under a 1 MiB request limit), took 150 MiB to decode, per call.
func TestReportedBlocksAreNotDecoded(t *testing.T) {
	pattern := writeDataset(t, t.TempDir(), 1, 2)
	s, _ := newService(t, Config{ChunksPerTask: 1})
	if err := s.ReportDataset(context.Background(), []string{pattern}); err != nil {
		t.Fatal(err)
	}
	p := startPort(t, s, ServerConfig{Limits: Limits{MaxRequestBytes: 1 << 20}})
	var request bytes.Buffer // encoded before measuring: only the master allocates then
	enc := gob.NewEncoder(&request)
	finished := wire.Task{Index: 0, Epoch: 7, Blocks: make([]wire.Block, 900_000)}
	for seq, method := range []string{"Master.TaskFinished", "Master.TaskFailed", "Master.GetTask"} {
		if err := enc.Encode(rpc.Request{ServiceMethod: method, Seq: uint64(seq)}); err != nil {
			t.Fatal(err)
		}
		if err := enc.Encode(finished); err != nil {
			t.Fatal(err)
		}
	}
	conn, err := net.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	dec := gob.NewDecoder(conn)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := conn.Write(request.Bytes()); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		var resp rpc.Response
		var task wire.Task
		if err := dec.Decode(&resp); err != nil {
			t.Fatal(err)
		}
		if err := dec.Decode(&task); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(resp.Error, "gob") || strings.Contains(resp.Error, "type") || strings.Contains(resp.Error, "max-request-bytes") {
			t.Fatalf("%s answered %q", resp.ServiceMethod, resp.Error)
		}
	}
	runtime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("%d bytes sent, %d KiB allocated", request.Len(), allocated>>10)
	if allocated > 8<<20 {
		t.Fatalf("three calls carrying %d blocks allocated %d MiB", len(finished.Blocks), allocated>>20)
	}
}

// TestLargestReportFitsTheDefaultRequestSize: a dataset report at the
// dataset limits (10,000 patterns, 64 KiB in all, the shape that frames
// largest) passes the default request size and reaches the dataset checks.
func TestLargestReportFitsTheDefaultRequestSize(t *testing.T) {
	s, _ := newService(t, Config{ChunksPerTask: 1})
	p := startPort(t, s, ServerConfig{})
	patterns := make([]string, dataset.DefaultMaxPatterns)
	total := 0
	for i := range patterns {
		n := (dataset.DefaultMaxTotalBytes - total) / (len(patterns) - i)
		patterns[i] = "/" + strings.Repeat("x", n-1)
		total += n
	}
	if total != dataset.DefaultMaxTotalBytes {
		t.Fatalf("%d bytes of patterns", total)
	}
	c, err := rpc.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	err = c.Call("Master.ReportDataset", patterns, new(int))
	if err == nil || strings.Contains(err.Error(), "max-request-bytes") || !strings.Contains(err.Error(), "/xxxxx") {
		t.Fatalf("the largest report within the dataset limits answered %.300v; want refused for its files", err)
	}
}
