package master

import (
	"context"
	"fmt"
	"reflect"
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

func (r *recordingObserver) CheckpointStored(cp CheckpointSummary) {
	r.add("checkpoint %d %q stored by %d trainers pinned %v", cp.ID, cp.Name, cp.Trainers, cp.Pinned)
}
func (r *recordingObserver) Rewound(ev RewindEvent) {
	r.add("rewound %s to checkpoint %d: generation %d pass %d left %d mark %q", ev.Dataset, ev.Checkpoint, ev.Gen.Gen, ev.Gen.Pass, ev.Gen.Left, ev.Gen.Mark)
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

// TestObserverIsToldCheckpointsAndRewinds: the Observer hears of each
// data checkpoint once it is stored (not of a retry answered its ID), and
// of each dataset rewound once the rewind is durable, with its new
// generation (not of the second call of the same restart). Checkpoints
// and JobState show the checkpoints kept and the last rewind, and so does
// a new service of the same stores, as after a failover.
func TestObserverIsToldCheckpointsAndRewinds(t *testing.T) {
	obs := &recordingObserver{}
	store, cps := NewMemoryStore(), &MemoryCheckpoints{}
	cfg := Config{ChunksPerTask: 1, Store: store, Checkpoints: cps, CheckpointsKept: 2, CheckpointWait: time.Minute,
		Queue: taskqueue.Config{Passes: 2}, Observer: obs}
	s, clock := newService(t, cfg)
	if err := s.ReportDataset(ctx, []string{writeDataset(t, t.TempDir(), 1, 4)}); err != nil { // 4 tasks of 3 records
		t.Fatal(err)
	}
	if got := s.Checkpoints(); got.Last != nil || got.Kept != nil {
		t.Fatalf("checkpoints before any: %+v", got)
	}
	a, err := s.GetTask(ctx, wire.Task{Trainer: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.TaskFinished(ctx, a); err != nil {
		t.Fatal(err)
	}
	obs.take()
	for i, name := range []string{"step-1", "step-1", "step-2", "step-3", "step-4"} {
		clock.Advance(time.Second)
		rep, err := s.Checkpoint(ctx, wire.Checkpoint{Name: name, Trainer: "a", Trainers: 1, Pin: i == 0})
		if err != nil || rep.ID != int64(max(i, 1)) {
			t.Fatalf("checkpoint %q: %+v, %v", name, rep, err)
		}
	}
	want := []string{`checkpoint 1 "step-1" stored by 1 trainers pinned true`, `checkpoint 2 "step-2" stored by 1 trainers pinned false`,
		`checkpoint 3 "step-3" stored by 1 trainers pinned false`, `checkpoint 4 "step-4" stored by 1 trainers pinned false`}
	if got := obs.take(); !slices.Equal(got, want) {
		t.Errorf("told\n%q\nwant\n%q", got, want)
	}
	wantKept := CheckpointsState{Last: &CheckpointSummary{ID: 4, Name: "step-4", Time: time.Date(2026, 1, 1, 0, 0, 5, 0, time.UTC), Trainers: 1},
		Kept: []int64{1, 3, 4}, Pinned: []int64{1}}
	if got := s.Checkpoints(); !reflect.DeepEqual(got, wantKept) {
		t.Errorf("kept %+v %+v, want %+v %+v", got, got.Last, wantKept, wantKept.Last)
	}

	for i := range 2 { // two ranks of restart r1: one rewinds
		rep, err := s.Rewind(ctx, wire.Rewind{ID: 1, Restart: "r1"})
		if err != nil || rep.Rewound != (i == 0) {
			t.Fatalf("rewind %d: %+v, %v", i, rep, err)
		}
	}
	j, _ := s.Job()
	now := int(clock.Now().UnixMilli())
	wantGen := taskqueue.Generation{Gen: now, Pass: 0, Left: 9, Mark: "checkpoint 1, restart r1", Reserved: now}
	if j.Gen != wantGen {
		t.Errorf("the job's generation %+v, want %+v", j.Gen, wantGen)
	}
	want = []string{fmt.Sprintf(`rewound train to checkpoint 1: generation %d pass 0 left 9 mark "checkpoint 1, restart r1"`, wantGen.Gen)}
	if got := obs.take(); !slices.Equal(got, want) {
		t.Errorf("told\n%q\nwant\n%q", got, want)
	}
	if id, restart, ok := RewindMark(j.Gen.Mark); id != 1 || restart != "r1" || !ok {
		t.Errorf("RewindMark(%q) = %d %q %v", j.Gen.Mark, id, restart, ok)
	}

	s.Close()
	if got := s.Checkpoints(); got.Last != nil {
		t.Errorf("a closed service shows checkpoints: %+v", got)
	}
	cfg.Observer = &recordingObserver{}
	r, _ := newService(t, cfg)
	if err := r.Restore(ctx); err != nil {
		t.Fatal(err)
	}
	if got := r.Checkpoints(); !reflect.DeepEqual(got, wantKept) {
		t.Errorf("a new service keeps %+v, want %+v", got, wantKept)
	}
	if j, _ := r.Job(); j.Gen != wantGen {
		t.Errorf("a new service's generation %+v, want %+v", j.Gen, wantGen)
	}
}

// TestRewindMark: RewindMark reads the marks rewinds write, a restart
// named with the mark's own words too, and nothing else.
func TestRewindMark(t *testing.T) {
	for _, tc := range []struct {
		mark    string
		id      int64
		restart string
		ok      bool
	}{
		{"checkpoint 7, restart r2", 7, "r2", true},
		{"checkpoint 12, restart a, restart b", 12, "a, restart b", true},
		{"checkpoint 3, restart ", 3, "", true},
		{"", 0, "", false},
		{"checkpoint x, restart r", 0, "", false},
		{"checkpoint 0, restart r", 0, "", false},
		{"checkpoint 5", 0, "", false},
		{"rewound to 5", 0, "", false},
	} {
		id, restart, ok := RewindMark(tc.mark)
		if id != tc.id || restart != tc.restart || ok != tc.ok {
			t.Errorf("RewindMark(%q) = %d %q %v, want %d %q %v", tc.mark, id, restart, ok, tc.id, tc.restart, tc.ok)
		}
	}
}
