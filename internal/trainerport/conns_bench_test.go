package trainerport_test

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/rpc"
	"net/rpc/jsonrpc"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/credfile"
	"github.com/trainmaster/master/internal/etcdembed/etcdtest"
	"github.com/trainmaster/master/internal/proc"
	"github.com/trainmaster/master/internal/trainerport"
	"github.com/trainmaster/master/internal/trainerport/porttest"
)

// What an idle connection costs the port. The clients run in a child
// process (this test binary again, see TestMain), so that the figures are
// the server's alone and both processes stay within the file limit.

var idleHeapProfile = flag.String("idle-heap-profile", "", "BenchmarkIdleConnections writes a heap profile to this `file` while its connections are idle (set -memprofilerate 1 for every allocation)")

// clientsEnv carries the child's orders (a clientsJob, as JSON).
const clientsEnv = "TRAINERPORT_BENCH_CLIENTS"

// clientsJob is what the child process does: open Conns connections to
// Addr, in Codec ("gob" or "json"), over TLS trusting the CA in CAFile
// when it is set, and make two calls on each.
type clientsJob struct {
	Addr   string
	Codec  string
	Conns  int
	CAFile string
}

func TestMain(m *testing.M) {
	if orders := os.Getenv(clientsEnv); orders != "" {
		os.Exit(runClients(orders))
	}
	os.Exit(m.Run())
}

// runClients is the child: it connects and calls, says "ready" on its
// standard output, and holds the connections until its standard input
// ends.
func runClients(orders string) int {
	var job clientsJob
	if err := json.Unmarshal([]byte(orders), &job); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	clients, err := job.connect()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("ready")
	io.Copy(io.Discard, os.Stdin)
	for _, c := range clients {
		c.Close()
	}
	return 0
}

// connect opens the job's connections, 32 at a time, each calling Status
// and then GetTask under a trainer name of its own.
func (job clientsJob) connect() ([]*rpc.Client, error) {
	clients := make([]*rpc.Client, job.Conns)
	next := make(chan int)
	errs := make(chan error, job.Conns)
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				c, err := job.call(i)
				clients[i] = c
				errs <- err
			}
		}()
	}
	for i := range job.Conns {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return clients, err
		}
	}
	return clients, nil
}

func (job clientsJob) call(i int) (*rpc.Client, error) {
	conn, err := job.dial()
	if err != nil {
		return nil, err
	}
	var c *rpc.Client
	if job.Codec == "json" {
		c = jsonrpc.NewClient(conn)
	} else {
		c = rpc.NewClient(conn)
	}
	if err := c.Call(wire.ServiceName+".Status", 0, new(wire.Status)); err != nil {
		return c, err
	}
	return c, c.Call(wire.ServiceName+".GetTask", wire.Task{Trainer: fmt.Sprintf("trainer-%d", i)}, new(wire.Task))
}

func (job clientsJob) dial() (net.Conn, error) {
	if job.CAFile == "" {
		return net.DialTimeout("tcp", job.Addr, 10*time.Second)
	}
	pool, err := credfile.CertPool(job.CAFile)
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", job.Addr, cfg)
}

// BenchmarkIdleConnections measures what a connection costs the port
// once its calls are answered, idle as most trainers' connections are
// between calls (past DecoderIdle): per connection, the heap in use, the
// goroutine stacks, the goroutines and the resident memory (after a GC
// that returns what is free to the system); and the heap in use just
// after the calls (heap-called). Each connection made a Status and a
// GetTask call under a name of its own.
//
//	go test -run '^$' -bench IdleConnections -benchtime 1x ./internal/trainerport
func BenchmarkIdleConnections(b *testing.B) {
	for _, codec := range []string{"gob", "json", "gob-tls"} {
		for _, conns := range []int{1000, 10000} {
			b.Run(fmt.Sprintf("%s/%d", codec, conns), func(b *testing.B) {
				limit := proc.FileLimit()
				if limit == 0 {
					b.Skip("the file limit (RLIMIT_NOFILE) is unknown here")
				}
				if uint64(conns+256) > limit {
					b.Skipf("%d connections need more than the file limit of %d", conns, limit)
				}
				benchIdleConnections(b, codec, conns)
			})
		}
	}
}

func benchIdleConnections(b *testing.B, codec string, conns int) {
	count := newConnCount()
	cfg := trainerport.Config{Log: quietLog(), Limits: trainerport.Limits{MaxConns: conns + 16}}
	job := clientsJob{Codec: codec, Conns: conns}
	if codec == "gob-tls" {
		certs := etcdtest.GenerateCerts(b)
		cfg.TLS = porttest.TLS(b, certs.ServerCert, certs.ServerKey, "")
		job.Codec, job.CAFile = "gob", certs.CAFile
	}
	lis := porttest.Listen(b)
	job.Addr = lis.Addr().String()
	porttest.Serve(b, cfg, lis, serving(&receiver{}, count))
	var before, called, idle usage
	for range b.N {
		before = measure()
		stop := startClients(b, job)
		count.await(conns)
		called = measure()
		time.Sleep(trainerport.DecoderIdle + time.Second/2) // idle: the decoders given back
		idle = measure()
		if *idleHeapProfile != "" {
			writeHeapProfile(b, *idleHeapProfile)
		}
		stop()
		count.await(0)
	}
	perConn := func(after, before uint64) float64 { return (float64(after) - float64(before)) / float64(conns) }
	b.ReportMetric(perConn(idle.heap, before.heap), "heap-B/conn")
	b.ReportMetric(perConn(idle.stack, before.stack), "stack-B/conn")
	b.ReportMetric(perConn(idle.rss, before.rss), "rss-B/conn")
	b.ReportMetric(float64(idle.goroutines-before.goroutines)/float64(conns), "goroutines/conn")
	b.ReportMetric(perConn(called.heap, before.heap), "heap-called-B/conn")
	b.ReportMetric(0, "ns/op")
}

// startClients starts the child process of job and waits until its
// connections are open and their calls answered; stop ends it.
func startClients(b *testing.B, job clientsJob) (stop func()) {
	orders, err := json.Marshal(job)
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), clientsEnv+"="+string(orders))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	stop = func() {
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			b.Fatalf("the clients: %v", err)
		}
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if line != "ready\n" {
		stop()
		b.Fatalf("the clients said %q, %v", line, err)
	}
	return stop
}

// usage is what the process holds, after a GC.
type usage struct {
	heap, stack, rss uint64
	goroutines       int
}

func measure() usage {
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return usage{heap: ms.HeapInuse, stack: ms.StackInuse, rss: residentBytes(), goroutines: runtime.NumGoroutine()}
}

// residentBytes is the process's resident memory (VmRSS), or 0 where
// /proc does not say.
func residentBytes() uint64 {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(status)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func writeHeapProfile(b *testing.B, path string) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		b.Fatal(err)
	}
}

// connCount is a Listener counting the connections served.
type connCount struct {
	mu      sync.Mutex // guards open and changed
	open    int
	changed chan struct{} // closed, and replaced, at every change of open
}

func newConnCount() *connCount { return &connCount{changed: make(chan struct{})} }

func (c *connCount) add(d int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.open += d
	close(c.changed)
	c.changed = make(chan struct{})
}

func (c *connCount) state() (int, <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.open, c.changed
}

// await waits until n connections are served.
func (c *connCount) await(n int) {
	for open, changed := c.state(); open != n; open, changed = c.state() {
		<-changed
	}
}

func (c *connCount) ConnOpened(uint64, string)   { c.add(1) }
func (c *connCount) ConnCarries(uint64, string)  {}
func (c *connCount) ConnClosed(uint64, []string) { c.add(-1) }
