package master

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/taskqueue"
)

// checkpointService is a service of one dataset of 4 tasks of 3 records,
// 2 passes, its train store and checkpoints kept for a restore.
func checkpointService(t *testing.T, store *MemoryStore, cps *MemoryCheckpoints, kept int) (*Service, *fakeClock, Config) {
	t.Helper()
	pattern := writeDataset(t, t.TempDir(), 1, 4)
	cfg := Config{ChunksPerTask: 1, Store: store, Checkpoints: cps, CheckpointsKept: kept, CheckpointWait: time.Minute,
		Queue: taskqueue.Config{Passes: 2}}
	s, clock := newService(t, cfg)
	if err := s.ReportDataset(ctx, []string{pattern}); err != nil {
		t.Fatal(err)
	}
	return s, clock, cfg
}

// TestCheckpointOfTwoTrainersAndRewind: two trainers take a checkpoint
// together, each reporting the task it holds; training goes on; a restart
// rewinds to it (two ranks at once: one rewinds), and the records handed
// out then are exactly the ones the checkpoint did not hold trained. A
// report of a dispatch from before the rewind is stale.
func TestCheckpointOfTwoTrainersAndRewind(t *testing.T) {
	store, cps := NewMemoryStore(), &MemoryCheckpoints{}
	s, _, cfg := checkpointService(t, store, cps, 5)
	a, err := s.GetTask(ctx, wire.Task{Trainer: "a"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.GetTask(ctx, wire.Task{Trainer: "b"})
	if err != nil {
		t.Fatal(err)
	}
	a.Trainer = "a"
	c, err := s.GetTask(ctx, a) // a finished task 0, holds task 2
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	replies := make([]wire.CheckpointReply, 2)
	errs := make([]error, 2)
	for i, held := range []wire.Held{{Index: c.Index, Epoch: c.Epoch, Pass: 0, Done: 2}, {Index: b.Index, Epoch: b.Epoch, Pass: 0, Done: 1}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			replies[i], errs[i] = s.Checkpoint(ctx, wire.Checkpoint{Name: "step-10", Trainer: []string{"a", "b"}[i], Trainers: 2, Held: []wire.Held{held}})
		}()
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil || replies[0].ID != 1 || replies[1].ID != 1 {
		t.Fatalf("checkpoint: %+v %v, %+v %v", replies[0], errs[0], replies[1], errs[1])
	}
	// A retry is answered the stored ID.
	if again, err := s.Checkpoint(ctx, wire.Checkpoint{Name: "step-10", Trainer: "a", Trainers: 1}); err != nil || again.ID != 1 {
		t.Fatalf("retry: %+v %v", again, err)
	}
	// Training goes on: everything finished.
	for _, done := range []wire.Task{b, c} {
		if _, err := s.TaskFinished(ctx, done); err != nil {
			t.Fatal(err)
		}
	}

	// A new master of the same stores: two ranks rewind at once.
	s.Close()
	r, _ := newService(t, cfg)
	if err := r.Restore(ctx); err != nil {
		t.Fatal(err)
	}
	var rewound [2]bool
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rep, err := r.Rewind(ctx, wire.Rewind{ID: 1, Restart: "r1"})
			if err != nil {
				t.Error(err)
			}
			rewound[i] = rep.Rewound
		}()
	}
	wg.Wait()
	if rewound[0] == rewound[1] {
		t.Fatalf("rewound %v: want exactly one call to rewind", rewound)
	}
	if rep, err := r.TaskFinished(ctx, b); rep != wire.StalePass || err != nil {
		t.Fatalf("a finish from before the rewind: %v %v", rep, err)
	}
	handed := map[int][2]int{} // root -> first, end position handed
	var records int
	for {
		task, err := r.GetTask(ctx, wire.Task{Trainer: "c"})
		if wire.Is(err, wire.TextNoTask) {
			break
		}
		if err != nil || task.Gen == 0 {
			t.Fatalf("after the rewind: %+v %v", task, err)
		}
		end := task.To
		if end == 0 {
			end = 3
		}
		handed[task.Root()] = [2]int{task.From, end}
		records += end - task.From
	}
	want := map[int][2]int{c.Index: {2, 3}, b.Index: {1, 3}, 3: {0, 3}}
	if len(handed) != len(want) || records != 1+2+3 {
		t.Fatalf("handed %v (%d records), want %v", handed, records, want)
	}
	for root, w := range want {
		if handed[root] != w {
			t.Errorf("task %d handed %v, want %v", root, handed[root], w)
		}
	}
}

// TestCheckpointRefusals: a trainer missing past the wait, reports that
// disagree, a rewind to a checkpoint not kept: the texts and what they
// name; the oldest unpinned checkpoints are dropped past the kept count.
func TestCheckpointRefusals(t *testing.T) {
	s, clock, _ := checkpointService(t, NewMemoryStore(), &MemoryCheckpoints{}, 2)
	done := make(chan error, 1)
	go func() {
		_, err := s.Checkpoint(ctx, wire.Checkpoint{Name: "lonely", Trainer: "a", Trainers: 2})
		done <- err
	}()
	waitGathering(t, s, "lonely")
	if _, err := s.Checkpoint(ctx, wire.Checkpoint{Name: "lonely", Trainer: "b", Trainers: 3}); err == nil ||
		err.Error() != "checkpoint incomplete: trainer b takes checkpoint \"lonely\" with 3 trainers, others with 2" {
		t.Fatalf("reports that disagree: %v", err)
	}
	clock.Advance(time.Minute)
	if err := <-done; !wire.Is(err, wire.TextCheckpointIncomplete) || !wire.Is(err, "1 of the 2 trainers of checkpoint \"lonely\" reported within 1m0s (a)") {
		t.Fatalf("a trainer missing: %v", err)
	}
	var ids []int64
	for i, pin := range []bool{true, false, false, false} {
		rep, err := s.Checkpoint(ctx, wire.Checkpoint{Name: string(rune('p' + i)), Trainer: "a", Trainers: 1, Pin: pin})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, rep.ID)
		if i == 3 && len(rep.Kept) != 3 {
			t.Fatalf("kept %v: want the pinned one and the last 2", rep.Kept)
		}
	}
	_, err := s.Rewind(ctx, wire.Rewind{ID: ids[1], Restart: "x"})
	if err == nil || err.Error() != "unknown checkpoint: checkpoint 2 is not kept (kept: 1, 3, 4)" {
		t.Fatalf("rewind to a dropped checkpoint: %v", err)
	}
	if _, err := s.Checkpoint(ctx, wire.Checkpoint{Name: "", Trainers: 1}); !wire.Is(err, wire.TextBadCheckpoint) {
		t.Fatalf("a checkpoint without a name: %v", err)
	}
}

// waitGathering waits until checkpoint name gathers reports.
func waitGathering(t *testing.T, s *Service, name string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		s.cps.mu.Lock()
		g := s.cps.open[name]
		s.cps.mu.Unlock()
		if g != nil {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("checkpoint %q never gathered a report", name)
}

// heldCheckpoints holds its first save until released, and counts saves.
type heldCheckpoints struct {
	MemoryCheckpoints
	entered, release chan struct{}
	saves            atomic.Int64
}

func (h *heldCheckpoints) SaveCheckpoints(ctx context.Context, cps []DataCheckpoint, drop []int64) error {
	if h.saves.Add(1) == 1 {
		h.entered <- struct{}{}
		<-h.release
	}
	return h.MemoryCheckpoints.SaveCheckpoints(ctx, cps, drop)
}

// TestCheckpointsAreStoredTogether: checkpoints completed while one is
// being stored are stored together, in one write, each with an ID of its
// own; past the kept count the oldest go in the same write.
func TestCheckpointsAreStoredTogether(t *testing.T) {
	cps := &heldCheckpoints{entered: make(chan struct{}), release: make(chan struct{})}
	s, _, _ := checkpointService(t, NewMemoryStore(), &MemoryCheckpoints{}, 3)
	s.cfg.Checkpoints = cps
	var wg sync.WaitGroup
	ids := make(chan int64, 11)
	take := func(name string) {
		defer wg.Done()
		rep, err := s.Checkpoint(ctx, wire.Checkpoint{Name: name, Trainer: name, Trainers: 1})
		if err != nil {
			t.Error(err)
		}
		ids <- rep.ID
	}
	wg.Add(1)
	go take("first")
	<-cps.entered
	for i := range 10 {
		wg.Add(1)
		go take(fmt.Sprintf("t%d", i))
	}
	waitQueued(t, s, 10)
	close(cps.release)
	wg.Wait()
	close(ids)
	seen := map[int64]bool{}
	for id := range ids {
		seen[id] = true
	}
	if len(seen) != 11 || cps.saves.Load() != 2 {
		t.Fatalf("%d distinct IDs in %d saves, want 11 in 2", len(seen), cps.saves.Load())
	}
	if kept, _ := cps.LoadCheckpoints(ctx); len(kept) != 3 || kept[0].ID != 9 {
		t.Fatalf("kept %d checkpoints from %d, want the last 3", len(kept), kept[0].ID)
	}
}

// waitQueued waits until n checkpoints wait for the storer.
func waitQueued(t *testing.T, s *Service, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		s.cps.mu.Lock()
		queued := len(s.cps.ready)
		s.cps.mu.Unlock()
		if queued == n {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("%d checkpoints never queued", n)
}

// TestACheckpointRetriedAfterItWasStored: a trainer whose call is retried
// after the others completed and stored the checkpoint is answered its ID
// at once, not left to gather alone.
func TestACheckpointRetriedAfterItWasStored(t *testing.T) {
	s, _, _ := checkpointService(t, NewMemoryStore(), &MemoryCheckpoints{}, 5)
	var wg sync.WaitGroup
	for _, name := range []string{"a", "b"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.Checkpoint(ctx, wire.Checkpoint{Name: "step-40", Trainer: name, Trainers: 2}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	rep, err := s.Checkpoint(ctx, wire.Checkpoint{Name: "step-40", Trainer: "a", Trainers: 2})
	if err != nil || rep.ID != 1 {
		t.Fatalf("the retry: %+v %v", rep, err)
	}
}
