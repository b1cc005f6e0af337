package master

import (
	"bytes"
	"context"
	"encoding/gob"
	"net"
	"net/rpc"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trainmaster/master/go/client"
	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/dataset"
	"github.com/trainmaster/master/internal/trainerport"
)

// The service through the trainer port: what the port's limits mean for
// the master's calls, and a trainer riding out the port's idle closes.

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

// TestClientRidesOutIdleCloses: the master closes a trainer's connection
// while the trainer consumes a task; go/client dials again on its next call
// and the Records loop sees no error.
func TestClientRidesOutIdleCloses(t *testing.T) {
	pattern := writeDataset(t, t.TempDir(), 1, 4)
	s, _ := newService(t, Config{ChunksPerTask: 1})
	p := startPort(t, s, trainerport.Config{Limits: trainerport.Limits{IdleTimeout: 100 * time.Millisecond}})
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
		if tasks++; tasks <= 2 && !p.log.AwaitCount("closing an idle connection", tasks, 5*time.Second) {
			break // consumed slowly: the connection idled meanwhile, or the test fails below
		}
	}
	if n := p.log.Count("closing an idle connection"); n < 2 {
		t.Fatalf("%d idle connections closed, want 2", n)
	}
	if tasks != 4 {
		t.Fatalf("%d tasks consumed, want 4", tasks)
	}
	if n := dials.Load(); n < 3 {
		t.Fatalf("%d dials, want one more after each idle close", n)
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
	p := startPort(t, s, trainerport.Config{})
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
	p := startPort(t, s, trainerport.Config{Limits: trainerport.Limits{MaxRequestBytes: 1 << 20}})
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
	p := startPort(t, s, trainerport.Config{})
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
