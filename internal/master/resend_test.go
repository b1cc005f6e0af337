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

// TestRetriedAskGetsTheSameTask: a rank's GetTask that carries no finish,
// its answer lost (the leader failed over after committing), is retried
// with the same Ask: the new master hands the same dispatch, and a new Ask
// the next task; without the Ask the lost task would stay pending with
// the rank for ever (a rank's dispatch has no deadline).
func TestRetriedAskGetsTheSameTask(t *testing.T) {
	pattern := writeDataset(t, t.TempDir(), 1, 6)
	store := NewMemoryStore()
	cfg := Config{ChunksPerTask: 1, Store: store}
	s, _ := newService(t, cfg)
	if err := s.ReportDataset(ctx, []string{pattern}); err != nil {
		t.Fatal(err)
	}
	ask := wire.Task{Trainer: "rank-0", Rank: 0, Ranks: 2, Batch: 2, Ask: 41}
	lost, err := s.GetTask(ctx, ask)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	r, _ := newService(t, cfg)
	if err := r.Restore(ctx); err != nil {
		t.Fatal(err)
	}
	again, err := r.GetTask(ctx, ask)
	if err != nil || again.Index != lost.Index || again.Epoch != lost.Epoch {
		t.Fatalf("the retry got %+v (%v), want task %d epoch %d again", again, err, lost.Index, lost.Epoch)
	}
	ask.Ask = 42
	next, err := r.GetTask(ctx, ask)
	if err != nil || next.Index == lost.Index {
		t.Fatalf("a new ask got %+v (%v), want another task", next, err)
	}
	ask.Trainer = "rank-1"
	ask.Rank = 1
	ask.Ask = 41
	if other, err := r.GetTask(ctx, ask); err != nil || other.Index == lost.Index {
		t.Fatalf("another trainer's ask of the same number got %+v (%v)", other, err)
	}
}
