package leader

import (
	"context"
	"errors"
	"io"
	"net"
	"net/rpc"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/trainmaster/master/go/discovery"
	"github.com/trainmaster/master/go/recordio"
	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/etcdembed/etcdtest"
	"github.com/trainmaster/master/internal/master"
)

// run starts Run in the background and returns the channel of the
// addresses it serves on and a stop function that waits for Run to end.
func run(t *testing.T, cli *clientv3.Client) (<-chan string, func()) {
	t.Helper()
	log := logrus.New()
	log.SetOutput(io.Discard)
	return runWith(t, Config{Client: cli, Log: log})
}

// runWith is run with cfg, whose TTL, Addr and Serving it sets.
func runWith(t *testing.T, cfg Config) (<-chan string, func()) {
	t.Helper()
	serving := make(chan string, 4)
	cfg.TTL, cfg.Addr, cfg.Serving = 2, "127.0.0.1:0", func(a string) { serving <- a }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, cfg)
	}()
	stop := sync.OnceFunc(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	t.Cleanup(stop)
	return serving, stop
}

func await(t *testing.T, c <-chan string, limit time.Duration) string {
	t.Helper()
	select {
	case a := <-c:
		return a
	case <-time.After(limit):
		t.Fatalf("not serving after %v", limit)
	}
	return ""
}

// standBy runs a second master while one leads, checks that it does not
// serve for a while, and returns the channel of the addresses it serves on.
func standBy(t *testing.T, cli *clientv3.Client) <-chan string {
	t.Helper()
	serving, _ := run(t, cli)
	select {
	case <-serving:
		t.Fatal("the standby serves while the leader leads")
	case <-time.After(300 * time.Millisecond):
	}
	return serving
}

func TestResignHandsOverAtOnce(t *testing.T) {
	_, cli := etcdtest.Start(t)
	firstServing, stopFirst := run(t, cli)
	first := await(t, firstServing, 10*time.Second)
	secondServing := standBy(t, cli)
	start := time.Now()
	stopFirst()
	second := await(t, secondServing, 2*time.Second)
	t.Logf("handover after resign: %v", time.Since(start))
	if second == first {
		t.Fatalf("both served on %s", first)
	}
	resp, err := cli.Get(context.Background(), discovery.AddrKey(""))
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != second {
		t.Fatalf("published address %v %v, want %s", resp.Kvs, err, second)
	}
}

// TestStepsDownWhenItsLockGoes: the leader's lock key is deleted behind its
// back; its next write is rejected, the caller is told "master is not
// serving", and it stops serving and campaigns again.
func TestStepsDownWhenItsLockGoes(t *testing.T) {
	_, cli := etcdtest.Start(t)
	path := filepath.Join(t.TempDir(), "data.recordio")
	if err := recordio.WriteFile(path, 1, func(int) []byte { return []byte("one record") }); err != nil {
		t.Fatal(err)
	}

	serving, _ := run(t, cli)
	addr := await(t, serving, 10*time.Second)
	if _, err := cli.Delete(context.Background(), discovery.LockPrefix(""), clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	c, err := rpc.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var dummy int
	err = c.Call("Master.ReportDataset", []string{path}, &dummy) // saving the dataset is a write
	if !wire.Is(err, wire.TextNotServing) {
		t.Fatalf("a deposed leader answered %v", err)
	}
	again := await(t, serving, 15*time.Second) // alone, it wins the next election
	if again == addr {
		t.Fatalf("serving again on the same address %s: the old listener was not closed", addr)
	}
	if _, err := rpc.Dial("tcp", addr); err == nil {
		t.Fatal("the old listener still accepts connections")
	}
}

// breakable is a listener whose Accept fails for good, with an error that
// does not pass by itself, once broken.
type breakable struct {
	net.Listener
	broken chan struct{}
}

func (l *breakable) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	select {
	case <-l.broken:
		if c != nil {
			c.Close()
		}
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: errors.New("the network device went away")}
	default:
		return c, err
	}
}

func (l *breakable) breakNow() {
	close(l.broken)
	l.Listener.Close() // wakes the Accept in progress
}

// logBuffer is a log output that tests read while it is written.
type logBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestPortFailureHandsOver: when accepting fails for good the leader says
// so, ends its term and resigns at once, so that the standby serves well
// within the TTL instead of never (the lease kept alive by a master no
// trainer can reach).
func TestPortFailureHandsOver(t *testing.T) {
	_, cli := etcdtest.Start(t)
	listeners := make(chan *breakable, 4)
	logs := &logBuffer{}
	log := logrus.New()
	log.SetOutput(logs)
	firstServing, _ := runWith(t, Config{Client: cli, Log: log, Listen: func(addr string) (net.Listener, error) {
		lis, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, err
		}
		b := &breakable{Listener: lis, broken: make(chan struct{})}
		listeners <- b
		return b, nil
	}})
	await(t, firstServing, 10*time.Second)
	secondServing := standBy(t, cli)
	start := time.Now()
	(<-listeners).breakNow()
	second := await(t, secondServing, 1500*time.Millisecond) // the TTL is 2 s
	t.Logf("handover after the port failed: %v", time.Since(start))
	resp, err := cli.Get(context.Background(), discovery.AddrKey(""))
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != second {
		t.Fatalf("published address %v %v, want %s", resp.Kvs, err, second)
	}
	for _, want := range []string{"the trainer port failed: ending the term and resigning", "the network device went away", "resigned the master lock"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("no %q in the log:\n%s", want, logs.String())
		}
	}
}

// TestRefusesWhatNoTermFixes: a declared dataset that cannot be built, and
// a stored entry that is not valid, end Run with ErrRefused instead of a
// campaign repeated for ever.
func TestRefusesWhatNoTermFixes(t *testing.T) {
	_, cli := etcdtest.Start(t)
	data := filepath.Join(t.TempDir(), "data.recordio")
	if err := recordio.WriteFile(data, 2, func(i int) []byte { return []byte{byte(i)} }, recordio.WithMaxChunkBytes(1)); err != nil {
		t.Fatal(err)
	}
	log := logrus.New()
	log.SetOutput(io.Discard)
	declared := func(namespace string, patterns ...string) Config {
		return Config{Client: cli, Log: log, Namespace: namespace, TTL: 2, Addr: "127.0.0.1:0",
			Service: master.Config{ChunksPerTask: 1, Dataset: patterns}}
	}
	// A store whose first task entry is rewritten with an epoch below 1.
	serving, stop := runWith(t, declared("/bad-entry", data))
	await(t, serving, 10*time.Second)
	stop()
	entry := "/bad-entry/task_queues/train/tasks/0000000000"
	if _, err := cli.Put(context.Background(), entry, `{"pass":0,"queue":"pending","epoch":-3,"seq":1}`); err != nil {
		t.Fatal(err)
	}

	missing := filepath.Join(t.TempDir(), "missing-*.recordio")
	for _, c := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"declared dataset matching no file", declared("/missing", missing), missing},
		{"stored entry not valid", declared("/bad-entry", data), "task 0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err := Run(ctx, c.cfg)
			if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Run: %v; want ErrRefused naming %q", err, c.want)
			}
		})
	}
}

// TestTermsAndCandidates: the lock key carries the candidate's
// description; Term runs with the service when the term starts serving
// and returns once the term's context ends.
func TestTermsAndCandidates(t *testing.T) {
	_, cli := etcdtest.Start(t)
	log := logrus.New()
	log.SetOutput(io.Discard)
	terms := make(chan *master.Service, 4)
	me := discovery.Candidate{Host: "host-a", PID: 7, HTTP: "127.0.0.1:9090"}
	firstServing, stopFirst := runWith(t, Config{Client: cli, Log: log, Candidate: &me, Term: func(ctx context.Context, s *master.Service) {
		terms <- s
		<-ctx.Done()
		terms <- nil
	}})
	await(t, firstServing, 10*time.Second)
	if svc := <-terms; svc == nil {
		t.Fatal("Term told nil at the start of a term")
	}
	secondServing := standBy(t, cli)
	masters, err := discovery.Masters(context.Background(), cli, "")
	if err != nil || len(masters) != 2 || masters[0].Candidate != me || !masters[0].Leading || masters[1].Leading ||
		masters[1].PID != os.Getpid() || masters[1].HTTP != "" {
		t.Fatalf("masters %+v %v", masters, err)
	}
	stopFirst()
	if svc := <-terms; svc != nil {
		t.Fatal("Term did not return at the end of the term")
	}
	await(t, secondServing, 2*time.Second)
}
