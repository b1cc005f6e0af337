package master

import (
	"testing"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/taskqueue"
)

// TestTheLastFinishStoresTheEnd: a GetTask whose finish ends the last pass
// is answered all passes done, and the store holds every pass done: a new
// master of it hands out nothing.
func TestTheLastFinishStoresTheEnd(t *testing.T) {
	pattern := writeDataset(t, t.TempDir(), 1, 1)
	store := NewMemoryStore()
	cfg := Config{ChunksPerTask: 1, Store: store, Queue: taskqueue.Config{Passes: 2}}
	s, _ := newService(t, cfg)
	if err := s.ReportDataset(ctx, []string{pattern}); err != nil {
		t.Fatal(err)
	}
	task, err := s.GetTask(ctx, wire.Task{})
	for pass := 0; pass < 2; pass++ {
		if err != nil || task.Pass != pass {
			t.Fatalf("pass %d: %+v %v", pass, task, err)
		}
		task, err = s.GetTask(ctx, task)
	}
	if !wire.Is(err, wire.TextAllDone) {
		t.Fatalf("the last finish: %+v %v", task, err)
	}
	snap, err := store.Load(ctx)
	if err != nil || snap.Pass != 2 {
		t.Fatalf("stored pass %d (%v), want 2: every pass done", snap.Pass, err)
	}
}
