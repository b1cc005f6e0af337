package master

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/dataset"
	"github.com/trainmaster/master/internal/taskqueue"
)

var ctx = context.Background()

func newService(t *testing.T, cfg Config) (*Service, *fakeClock) {
	t.Helper()
	clock := newFakeClock()
	cfg.Clock, cfg.Log = clock, quietLog()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, clock
}

func TestReportDataset(t *testing.T) {
	dir := t.TempDir()
	pattern := writeDataset(t, dir, 3, 4) // 12 chunks
	s, _ := newService(t, Config{ChunksPerTask: 5})
	if _, err := s.GetTask(ctx, wire.Task{}); !wire.Is(err, wire.TextNoDataset) {
		t.Fatalf("GetTask before the dataset: %v", err)
	}
	// A failing call is not honoured, and names the problem.
	err := s.ReportDataset(ctx, []string{dir + "/nothing-*.recordio"})
	if err == nil || !strings.Contains(err.Error(), "matches no file") {
		t.Fatalf("empty glob: %v", err)
	}
	if err := s.ReportDataset(ctx, []string{pattern}); err != nil {
		t.Fatal(err)
	}
	if st := status(t, s); st.Tasks != 3 || st.Todo != 3 {
		t.Fatalf("status %+v, want 3 tasks of 5, 5 and 2 chunks", st)
	}
	if err := s.ReportDataset(ctx, []string{pattern}); err != nil {
		t.Fatalf("same list again: %v", err)
	}
	err = s.ReportDataset(ctx, []string{pattern, "other"})
	if err == nil || !strings.Contains(err.Error(), pattern) || !strings.Contains(err.Error(), "other") {
		t.Fatalf("different list: %v, want both lists named", err)
	}
}

func TestReportDatasetBadFile(t *testing.T) {
	dir := t.TempDir()
	pattern := writeDataset(t, dir, 1, 2)
	bad := dir + "/part-bad.recordio"
	if err := writeFile(bad, "this is not recordio at all"); err != nil {
		t.Fatal(err)
	}
	s, _ := newService(t, Config{})
	err := s.ReportDataset(ctx, []string{pattern})
	if err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "bad magic") {
		t.Fatalf("error %v, want it to name %s and the bad magic", err, bad)
	}
	if err := removeFile(bad); err != nil {
		t.Fatal(err)
	}
	if err := s.ReportDataset(ctx, []string{pattern}); err != nil {
		t.Fatalf("a later good call: %v", err)
	}
}

func TestGetTaskCarriesFinish(t *testing.T) {
	pattern := writeDataset(t, t.TempDir(), 1, 2)
	s, _ := newService(t, Config{ChunksPerTask: 1, Queue: taskqueue.Config{Passes: 2}})
	if err := s.ReportDataset(ctx, []string{pattern}); err != nil {
		t.Fatal(err)
	}
	a, err := s.GetTask(ctx, wire.Task{})
	if err != nil || a.Index != 0 || a.Epoch != 1 || a.Pass != 0 || len(a.Blocks) != 1 || a.Blocks[0].NumRecords != 3 {
		t.Fatalf("first task %+v %v", a, err)
	}
	b, err := s.GetTask(ctx, wire.Task{})
	if err != nil || b.Index != 1 {
		t.Fatalf("second task %+v %v", b, err)
	}
	if _, err := s.GetTask(ctx, wire.Task{}); !wire.Is(err, wire.TextNoTask) {
		t.Fatalf("third call: %v, want no task available", err)
	}
	// Finishing a with no task left: the finish is recorded all the same.
	if _, err := s.GetTask(ctx, a); !wire.Is(err, wire.TextNoTask) {
		t.Fatalf("finish a: %v", err)
	}
	if st := status(t, s); st.Done != 1 {
		t.Fatalf("finish carried by a GetTask that found no task was lost: %+v", st)
	}
	// Finishing b ends pass 0; the same call gets the first task of pass 1.
	next, err := s.GetTask(ctx, b)
	if err != nil || next.Pass != 1 || next.Index != 0 {
		t.Fatalf("next pass task %+v %v", next, err)
	}
	// Repeating the finish on a retry is harmless.
	if rep, err := s.TaskFinished(ctx, b); rep != wire.StalePass || err != nil {
		t.Fatalf("repeated finish: %v %v", rep, err)
	}
}

func TestTimeoutThroughTheTimer(t *testing.T) {
	pattern := writeDataset(t, t.TempDir(), 1, 3)
	s, clock := newService(t, Config{ChunksPerTask: 1, Queue: taskqueue.Config{
		Timeout: time.Minute, TimeoutMin: time.Second, MinSamples: 1, Window: 4, MaxTimeouts: 1}})
	if err := s.ReportDataset(ctx, []string{pattern}); err != nil {
		t.Fatal(err)
	}
	first, _ := s.GetTask(ctx, wire.Task{})
	clock.Advance(2 * time.Second)
	stalled, err := s.GetTask(ctx, first) // first took 2 s: timeouts are now 3 × 2 s
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(5 * time.Second)
	if st := status(t, s); st.Pending != 1 {
		t.Fatalf("timed out early: %+v", st)
	}
	clock.Advance(time.Second + time.Millisecond)
	if st := status(t, s); st.Pending != 0 || st.Todo != 2 {
		t.Fatalf("after the adaptive 6 s timeout: %+v", st)
	}
	third, _ := s.GetTask(ctx, wire.Task{})
	again, err := s.GetTask(ctx, wire.Task{})
	if err != nil || again.Index != stalled.Index || again.Epoch != 2 {
		t.Fatalf("redispatch %+v %v, want task %d epoch 2", again, err, stalled.Index)
	}
	// The late finish of the stalled dispatch still counts.
	if rep, err := s.TaskFinished(ctx, stalled); rep != wire.Recorded || err != nil {
		t.Fatalf("late finish: %v %v", rep, err)
	}
	// A second timeout discards the third task, which ends the only pass.
	if _, err := s.TaskFailed(ctx, withError(third, "unreadable")); err != nil {
		t.Fatal(err)
	}
	third, _ = s.GetTask(ctx, wire.Task{})
	clock.Advance(time.Minute)
	if st := status(t, s); !st.AllDone {
		t.Fatalf("discarding the last task did not end the pass: %+v", st)
	}
	if _, err := s.GetTask(ctx, wire.Task{}); !wire.Is(err, wire.TextAllDone) {
		t.Fatalf("%v, want all passes done", err)
	}
}

func withError(t wire.Task, msg string) wire.Task {
	t.Error = msg
	return t
}

// failingStore fails commits on demand.
type failingStore struct {
	*MemoryStore
	mu   sync.Mutex
	fail bool
	err  error // what a failing commit returns; default "etcd unavailable"
}

func (f *failingStore) Commit(ctx context.Context, round int, ch taskqueue.Change) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail {
		if f.err != nil {
			return f.err
		}
		return errors.New("etcd unavailable")
	}
	return f.MemoryStore.Commit(ctx, round, ch)
}

func (f *failingStore) SaveDataset(ctx context.Context, ds *dataset.Dataset) error {
	return f.MemoryStore.SaveDataset(ctx, ds)
}

func TestFailedCommitChangesNothing(t *testing.T) {
	pattern := writeDataset(t, t.TempDir(), 1, 2)
	store := &failingStore{MemoryStore: NewMemoryStore()}
	s, _ := newService(t, Config{ChunksPerTask: 1, Store: store})
	if err := s.ReportDataset(ctx, []string{pattern}); err != nil {
		t.Fatal(err)
	}
	a, _ := s.GetTask(ctx, wire.Task{})
	store.fail = true
	// The caller is told to retry (the chaos run found trainers giving up on
	// a plain error when etcd was briefly unavailable).
	if _, err := s.GetTask(ctx, a); !wire.Is(err, wire.TextNotServing) || !strings.Contains(err.Error(), "etcd unavailable") {
		t.Fatalf("GetTask with a failing store: %v", err)
	}
	store.fail = false
	// The finish was not committed, so the task is still pending; the
	// dispatch was not committed either, so task 1 is handed out now.
	b, err := s.GetTask(ctx, wire.Task{})
	if err != nil || b.Index != 1 || b.Epoch != 1 {
		t.Fatalf("after reload: %+v %v", b, err)
	}
	if st := status(t, s); st.Pending != 2 || st.Done != 0 {
		t.Fatalf("after reload: %+v", st)
	}
}

func TestBadReportsChangeNothing(t *testing.T) {
	pattern := writeDataset(t, t.TempDir(), 1, 2)
	s, _ := newService(t, Config{ChunksPerTask: 1})
	if err := s.ReportDataset(ctx, []string{pattern}); err != nil {
		t.Fatal(err)
	}
	a, _ := s.GetTask(ctx, wire.Task{})
	for _, bad := range []wire.Task{
		{Index: 99, Epoch: 1},
		{Index: -1, Epoch: 1},
		{Index: a.Index, Epoch: 5},
		{Index: a.Index, Epoch: 1, Pass: 3},
		{Index: a.Index, Epoch: -4},
		{Index: 1 << 62, Epoch: 1 << 62, Pass: -1 << 62},
	} {
		if _, err := s.TaskFinished(ctx, bad); err == nil {
			t.Errorf("finish %+v accepted", bad)
		}
		if _, err := s.TaskFailed(ctx, bad); err == nil {
			t.Errorf("failure %+v accepted", bad)
		}
		if _, err := s.GetTask(ctx, bad); err == nil {
			t.Errorf("GetTask carrying %+v accepted", bad)
		}
	}
	if st := status(t, s); st.Pending != 1 || st.Todo != 1 || st.Done != 0 {
		t.Fatalf("bad reports changed the queues: %+v", st)
	}
}

func TestLostLeadershipStopsTheService(t *testing.T) {
	pattern := writeDataset(t, t.TempDir(), 1, 2)
	store := &failingStore{MemoryStore: NewMemoryStore()}
	lost := make(chan error, 1)
	s, _ := newService(t, Config{ChunksPerTask: 1, Store: store})
	go func() { lost <- s.Run(context.Background()) }()
	if err := s.ReportDataset(ctx, []string{pattern}); err != nil {
		t.Fatal(err)
	}
	a, _ := s.GetTask(ctx, wire.Task{})
	store.fail, store.err = true, fmt.Errorf("etcdstore: fenced write rejected: %w", ErrLeadershipLost)
	if _, err := s.TaskFinished(ctx, a); !wire.Is(err, wire.TextNotServing) {
		t.Fatalf("finish after losing the lock: %v", err)
	}
	if err := <-lost; !errors.Is(err, ErrLeadershipLost) {
		t.Fatalf("Run returned %v", err)
	}
	store.fail = false // even with the store writable again, the service stays stopped
	if _, err := s.GetTask(ctx, wire.Task{}); !wire.Is(err, wire.TextNotServing) {
		t.Fatalf("GetTask after losing the lock: %v", err)
	}
	if st, err := s.Status(ctx); !wire.Is(err, wire.TextNotServing) || st.DatasetReported {
		t.Fatalf("status after losing the lock: %+v, %v", st, err)
	}
	if store.Commits() != 1 {
		t.Fatalf("%d commits, want only the first dispatch", store.Commits())
	}
}
