package client_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trainmaster/master/go/client"
	"github.com/trainmaster/master/go/client/clienttest"
	"github.com/trainmaster/master/go/recordio"
	"github.com/trainmaster/master/go/wire"
)

// fast is a Config for tests: short waits, quick retries.
var fast = client.Config{
	MinBackoff:  2 * time.Millisecond,
	MaxBackoff:  20 * time.Millisecond,
	DialTimeout: time.Second,
	CallTimeout: 5 * time.Second,
}

// dataset is the shape of the files a test writes.
type dataset struct{ files, records, perChunk int }

var small = dataset{files: 2, records: 20, perChunk: 4} // 10 chunks

// harness is a fake master serving a dataset and a client of it.
type harness struct {
	m        *clienttest.Master
	c        *client.Client
	paths    []string
	resolves atomic.Int64 // calls of the client's resolver
}

// setup starts a master, writes the dataset and reports it through a new
// client configured by cfg. It checks, when the test ends, that every
// goroutine started meanwhile has stopped.
func setup(t *testing.T, opt clienttest.Options, ds dataset, cfg client.Config) *harness {
	t.Helper()
	checkGoroutines(t)
	h := &harness{m: clienttest.Start(t, opt)}
	h.paths, _ = clienttest.WriteFiles(t, t.TempDir(), ds.files, ds.records, ds.perChunk)
	h.c = h.newClient(t, cfg)
	if err := h.c.ReportDataset(context.Background(), h.paths); err != nil {
		t.Fatal(err)
	}
	return h
}

// newClient returns a client of h's master that counts its resolves.
func (h *harness) newClient(t *testing.T, cfg client.Config) *client.Client {
	c := client.New(client.ResolverFunc(func(context.Context) (string, error) {
		h.resolves.Add(1)
		return h.m.Addr(), nil
	}), cfg)
	t.Cleanup(func() { c.Close() })
	return c
}

// checkGoroutines fails the test if, once its other cleanups have run, more
// goroutines run than when it was called (waiting a little for them to end).
func checkGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(3 * time.Second)
		for runtime.NumGoroutine() > before {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				buf = buf[:runtime.Stack(buf, true)]
				t.Errorf("%d goroutines running, %d before the test:\n%s", runtime.NumGoroutine(), before, buf)
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
}

// got is a record as yielded, copied.
type got struct {
	data       string
	task, pass int
	last       bool
}

// loop runs one Records loop. Before the body handles record n (counted
// from 0) it calls hooks[n]; the body stops the loop with break after
// breakAfter records when breakAfter > 0. While a task's records are being
// consumed, the master must not have recorded it finished.
type loop struct {
	hooks      map[int]func()
	breakAfter int
}

func (l loop) run(t *testing.T, ctx context.Context, m *clienttest.Master, c *client.Client) (recs []got, errs []error) {
	t.Helper()
	for rec, err := range c.Records(ctx) {
		if err != nil {
			errs = append(errs, err)
			continue // the loop must stop by itself
		}
		if m.Finished(rec.Pass, rec.Task) {
			t.Errorf("task %d of pass %d reported finished while its records are consumed", rec.Task, rec.Pass)
		}
		if hook := l.hooks[len(recs)]; hook != nil {
			hook()
		}
		recs = append(recs, got{string(rec.Data), rec.Task, rec.Pass, rec.Last})
		if l.breakAfter > 0 && len(recs) == l.breakAfter {
			break
		}
	}
	return recs, errs
}

// taskRecords reads the records of every task of m's dataset directly.
func taskRecords(t *testing.T, m *clienttest.Master) [][]string {
	t.Helper()
	var all [][]string
	for _, task := range m.Tasks() {
		var refs []recordio.ChunkRef
		for _, b := range task.Blocks {
			refs = append(refs, recordio.ChunkRef{Path: b.Path, Chunk: b.Idx, Offset: b.Offset})
		}
		s := recordio.NewScanner(refs)
		var recs []string
		for s.Scan() {
			recs = append(recs, string(s.Record()))
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		s.Close()
		all = append(all, recs)
	}
	return all
}

// runs splits recs into runs of one task's dispatch, checking that each run
// is the task's records in order with Last on the last one only.
func runs(t *testing.T, recs []got, want [][]string) (done []wire.Task) {
	t.Helper()
	for len(recs) > 0 {
		r := recs[0]
		n := len(want[r.task])
		if len(recs) < n {
			t.Fatalf("task %d pass %d: %d records yielded, it has %d", r.task, r.pass, len(recs), n)
		}
		for i, g := range recs[:n] {
			if g.task != r.task || g.pass != r.pass || g.data != want[r.task][i] || g.last != (i == n-1) {
				t.Fatalf("task %d pass %d record %d: got %+v, want %q", r.task, r.pass, i, g, want[r.task][i])
			}
		}
		done = append(done, wire.Task{Index: r.task, Pass: r.pass})
		recs = recs[n:]
	}
	return done
}

// checkExactlyOnce checks that recs hold every task of every pass exactly
// once, whole and in order, with the passes in order.
func checkExactlyOnce(t *testing.T, recs []got, want [][]string, passes int) {
	t.Helper()
	done := runs(t, recs, want)
	var keys, wantKeys []string
	for _, d := range done {
		keys = append(keys, fmt.Sprintf("%d/%03d", d.Pass, d.Index))
	}
	for p := range passes {
		for i := range want {
			wantKeys = append(wantKeys, fmt.Sprintf("%d/%03d", p, i))
		}
	}
	if !slices.IsSortedFunc(done, func(a, b wire.Task) int { return a.Pass - b.Pass }) {
		t.Errorf("passes out of order: %v", keys)
	}
	slices.Sort(keys)
	if !slices.Equal(keys, wantKeys) {
		t.Errorf("tasks delivered (pass/task):\n%v\nwant each once:\n%v", keys, wantKeys)
	}
}
