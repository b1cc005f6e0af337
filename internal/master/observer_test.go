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
	if _, err := s.TaskFailed(ctx, wire.Task{Index: a1.Index, Epoch: a1.Epoch, Pass: a1.Pass, Trainer: "a", Error: "disk"}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"called a", "dispatched 0 pass 0 epoch 1 records 3 to a",
		"called unnamed", "dispatched 1 pass 0 epoch 1 records 3 to unnamed",
		"called b?", "finished 0 pass 0 records 3 by b?",
		"called a", `failed 1 by "a" timeouts 1 discarded false reason "dispatch 1 failed: disk"`,
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
