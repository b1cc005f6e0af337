package master

import (
	"testing"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/taskqueue"
)

// TestRetriedGetTaskGetsTheSameTask: a GetTask whose answer was lost is
// retried with the same finish; the retry gets the dispatch that answered
// it, the same task and epoch, from the same master and from a new one
// restored from the store; another trainer's retry, or a finish that
// answered nothing, gets a task of its own.
func TestRetriedGetTaskGetsTheSameTask(t *testing.T) {
	pattern := writeDataset(t, t.TempDir(), 1, 4)
	store := NewMemoryStore()
	s, _ := newService(t, Config{ChunksPerTask: 1, Store: store})
	if err := s.ReportDataset(ctx, []string{pattern}); err != nil {
		t.Fatal(err)
	}
	first, err := s.GetTask(ctx, wire.Task{Trainer: "a"})
	if err != nil {
		t.Fatal(err)
	}
	first.Trainer = "a"
	lost, err := s.GetTask(ctx, first) // its answer never reaches a
	if err != nil {
		t.Fatal(err)
	}
	again, err := s.GetTask(ctx, first)
	if err != nil || again.Index != lost.Index || again.Epoch != lost.Epoch {
		t.Fatalf("retry: task %d epoch %d, %v; want the lost answer, task %d epoch %d", again.Index, again.Epoch, err, lost.Index, lost.Epoch)
	}
	if st := status(t, s); st.Pending != 1 || st.Done != 1 {
		t.Fatalf("status %+v, want 1 done and 1 pending", st)
	}

	s.Close()
	r, _ := newService(t, Config{ChunksPerTask: 1, Store: store})
	if err := r.Restore(ctx); err != nil {
		t.Fatal(err)
	}
	again, err = r.GetTask(ctx, first)
	if err != nil || again.Index != lost.Index || again.Epoch != lost.Epoch {
		t.Fatalf("retry to a new master: task %d epoch %d, %v; want task %d epoch %d", again.Index, again.Epoch, err, lost.Index, lost.Epoch)
	}
	other := first
	other.Trainer = "b"
	if got, err := r.GetTask(ctx, other); err != nil || got.Index == lost.Index {
		t.Fatalf("another trainer with the same finish: task %d, %v; want a task of its own", got.Index, err)
	}
	if e := train(r).q.Entry(lost.Index); e.For != (taskqueue.Finished{Task: first.Index, Epoch: first.Epoch, Pass: first.Pass}) {
		t.Fatalf("entry %+v does not name the finish it answered", e)
	}
}
