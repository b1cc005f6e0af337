package master

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pkg/errors"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/taskqueue"
)

// recordingObserver writes down what it is told, one line per call.
type recordingObserver struct {
	mu      sync.Mutex
	lines   []string
	commits int
	lost    int
	served  int
}

func (r *recordingObserver) add(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, fmt.Sprintf(format, args...))
}

func (r *recordingObserver) Called(name string, _ time.Time) { r.add("called %s", name) }
func (r *recordingObserver) Dispatched(name string, ev TaskEvent) {
	r.add("dispatched %d pass %d epoch %d records %d to %s", ev.Index, ev.Pass, ev.Epoch, ev.Records, name)
}
func (r *recordingObserver) Finished(name string, ev TaskEvent) {
	r.add("finished %d pass %d records %d by %s", ev.Index, ev.Pass, ev.Records, name)
}
func (r *recordingObserver) Retried(name string, ev TaskEvent, cause RetryCause) {
	r.add("%s %d by %q timeouts %d discarded %v reason %q", cause, ev.Index, name, ev.Timeouts, ev.Discarded, ev.Reason)
}
func (r *recordingObserver) Relieved(name string, kind taskqueue.Stragglers) {
	r.add("relieved %s by %s", kind, name)
}
func (r *recordingObserver) GetTaskServed(time.Duration, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.served++
}
func (r *recordingObserver) Committed(_ time.Duration, _ int, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.commits++
	if errors.Is(err, ErrLeadershipLost) {
		r.lost++
	}
}

func (r *recordingObserver) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	lines := r.lines
	r.lines = nil
	return lines
}

// TestObserverIsToldDurableChanges: the Observer hears of each dispatch,
// finish, failure and timeout once it is committed, with the name of the
// trainer that made the call (the name the master keeps), and of nothing a
// failed commit undid.
func TestObserverIsToldDurableChanges(t *testing.T) {
	obs := &recordingObserver{}
	store := &failingStore{MemoryStore: NewMemoryStore()}
	s, clock := newService(t, Config{ChunksPerTask: 1, Store: store, Observer: obs})
	ctx := context.Background()
	if err := s.ReportDataset(ctx, []string{writeDataset(t, t.TempDir(), 1, 3)}); err != nil {
		t.Fatal(err)
	}
	a0, err := s.GetTask(ctx, wire.Task{Trainer: "a"})
	if err != nil {
		t.Fatal(err)
	}
	a1, _ := s.GetTask(ctx, wire.Task{}) // no name: "unnamed"
	if _, err := s.TaskFinished(ctx, wire.Task{Index: a0.Index, Epoch: a0.Epoch, Pass: a0.Pass, Trainer: "b\n"}); err != nil {
		t.Fatal(err)
	}
	// Only the holder may fail a task (here, one that sent no name).
	if _, err := s.TaskFailed(ctx, wire.Task{Index: a1.Index, Epoch: a1.Epoch, Pass: a1.Pass, Error: "disk"}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"called a", "dispatched 0 pass 0 epoch 1 records 3 to a",
		"called unnamed", "dispatched 1 pass 0 epoch 1 records 3 to unnamed",
		"called b?", "finished 0 pass 0 records 3 by b?",
		"called unnamed", `failed 1 by "unnamed" timeouts 1 discarded false reason "dispatch 1 failed: disk"`,
	}
	if got := obs.take(); !slices.Equal(got, want) {
		t.Errorf("told\n%q\nwant\n%q", got, want)
	}

	a2, _ := s.GetTask(ctx, wire.Task{Trainer: "c"})
	clock.Advance(time.Hour) // its timeout passes
	want = []string{"called c", fmt.Sprintf("dispatched %d pass 0 epoch 1 records 3 to c", a2.Index),
		fmt.Sprintf(`timed out %d by "" timeouts 1 discarded false reason "dispatch 1 timed out after 10m0s"`, a2.Index)}
	if got := obs.take(); !slices.Equal(got, want) {
		t.Errorf("told\n%q\nwant\n%q", got, want)
	}

	store.mu.Lock()
	store.fail = true
	store.mu.Unlock()
	if _, err := s.GetTask(ctx, wire.Task{Trainer: "d"}); !wire.Is(err, wire.TextNotServing) {
		t.Fatalf("GetTask with a failing store: %v", err)
	}
	if got := obs.take(); !slices.Equal(got, []string{"called d"}) {
		t.Errorf("a dispatch whose commit failed was told: %q", got)
	}
	store.mu.Lock()
	store.fail, store.err = true, ErrLeadershipLost
	store.mu.Unlock()
	s.GetTask(ctx, wire.Task{Trainer: "e"})
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if obs.served != 5 || obs.lost != 1 || obs.commits < 6 {
		t.Errorf("GetTask served %d times (want 5), %d commits, %d rejected for lost leadership (want 1)", obs.served, obs.commits, obs.lost)
	}
}

// TestNoDatasetNoTrainer: a call that reaches no dataset (one the job does
// not hold, or train before it is reported) tells the Observer of no
// trainer, whatever name it carries; once train is reported, its calls
// are told.
func TestNoDatasetNoTrainer(t *testing.T) {
	ctx := context.Background()
	calls := []struct {
		name string
		call func(s *Service, dataset string) error
	}{
		{"GetTask", func(s *Service, dataset string) error {
			_, err := s.GetTask(ctx, wire.Task{Dataset: dataset, Trainer: "flood-1"})
			return err
		}},
		{"GetTask with a finish", func(s *Service, dataset string) error {
			_, err := s.GetTask(ctx, wire.Task{Dataset: dataset, Index: 0, Epoch: 1, Trainer: "flood-2"})
			return err
		}},
		{"TaskFinished", func(s *Service, dataset string) error {
			_, err := s.TaskFinished(ctx, wire.Task{Dataset: dataset, Index: 0, Epoch: 1, Trainer: "flood-3"})
			return err
		}},
		{"TaskFailed", func(s *Service, dataset string) error {
			_, err := s.TaskFailed(ctx, wire.Task{Dataset: dataset, Index: 0, Epoch: 1, Trainer: "flood-4", Error: "x"})
			return err
		}},
		{"TaskProgress", func(s *Service, dataset string) error {
			_, err := s.TaskProgress(ctx, wire.Progress{Dataset: dataset, Index: 0, Epoch: 1, Trainer: "flood-5", Done: 1})
			return err
		}},
	}
	obs := &recordingObserver{}
	s, _ := newService(t, Config{ChunksPerTask: 1, Observer: obs})
	for _, dataset := range []string{"", "missing"} {
		for _, c := range calls {
			if err := c.call(s, dataset); !wire.Is(err, wire.TextNoDataset) {
				t.Errorf("%s of dataset %q: %v, want %q", c.name, dataset, err, wire.TextNoDataset)
			}
		}
	}
	if got := obs.take(); len(got) != 0 {
		t.Errorf("calls that reached no dataset were told: %q", got)
	}
	if err := s.ReportDataset(ctx, []string{writeDataset(t, t.TempDir(), 1, 3)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetTask(ctx, wire.Task{Trainer: "honest"}); err != nil {
		t.Fatal(err)
	}
	if got := obs.take(); len(got) == 0 || got[0] != "called honest" {
		t.Errorf("a call of the reported dataset: told %q", got)
	}
}
