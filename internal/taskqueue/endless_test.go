package taskqueue

import (
	"errors"
	"math"
	"testing"
)

// TestEndlessPasses: queues without end run pass after pass, each its own,
// and are never all done; their per-pass state does not grow with the pass.
func TestEndlessPasses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   Config
		tasks int
	}{
		{"file order", Config{Endless: true}, 3},
		{"shuffled", Config{Endless: true, Seed: 42}, 5},
		{"one task", Config{Endless: true}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := newQueues(t, tc.cfg, tc.tasks)
			if q.Passes() != 0 {
				t.Fatalf("Passes() = %d, want 0 (no end)", q.Passes())
			}
			const passes = 6
			for p := range passes {
				if q.Pass() != p || q.AllDone() {
					t.Fatalf("at pass %d: Pass() %d, AllDone %v", p, q.Pass(), q.AllDone())
				}
				first, _ := dispatch(t, q, t0)
				if _, ch, err := q.Fail(first, p, 1, "", "boom"); err != nil || ch.PassChanged {
					t.Fatalf("pass %d: fail: %v %+v", p, err, ch)
				}
				var last Change
				for range tc.tasks {
					task, epoch := dispatch(t, q, t0)
					if _, ch, err := q.Finish(task, p, epoch, "", t0); err != nil {
						t.Fatalf("pass %d: finish task %d: %v", p, task, err)
					} else {
						last = ch
					}
				}
				if !last.PassChanged || last.Pass != p+1 {
					t.Fatalf("pass %d: the last finish changed %+v, want pass %d started", p, last, p+1)
				}
				if c := counts(q); c != [4]int{tc.tasks, 0, 0, 0} {
					t.Fatalf("pass %d started with counts %v", p+1, c)
				}
				if len(q.reasons) != 0 || len(q.entries) != q.tasks || len(q.holders.byTask) != 0 || len(q.resends.answers) != 0 || len(q.pieces.spans) != 0 {
					t.Fatalf("pass %d kept the state of pass %d: %d reasons, %d entries", p+1, p, len(q.reasons), len(q.entries))
				}
			}
			if _, err := q.AddPasses(1); !errors.Is(err, ErrPassesRunning) {
				t.Fatalf("AddPasses on queues without end: %v, want %v", err, ErrPassesRunning)
			}
		})
	}
}

// TestRestoreEndless: a stored pass of queues without end is where they
// go on, whatever its number; the counter's bound ends them.
func TestRestoreEndless(t *testing.T) {
	for _, tc := range []struct {
		pass    int
		allDone bool
	}{
		{0, false},
		{7, false},
		{1 << 20, false},
		{math.MaxInt32 - 1, false},
		{math.MaxInt32, true},
	} {
		q, err := Restore(Config{Endless: true}, 2, tenRecords, tc.pass, nil, t0)
		if err != nil {
			t.Fatal(err)
		}
		if q.Pass() != tc.pass || q.AllDone() != tc.allDone || q.Passes() != 0 {
			t.Errorf("restored at pass %d: Pass() %d, AllDone %v, Passes() %d", tc.pass, q.Pass(), q.AllDone(), q.Passes())
		}
		if _, _, _, err := q.Dispatch(t0, ""); (err != nil) != tc.allDone {
			t.Errorf("restored at pass %d: dispatch: %v", tc.pass, err)
		}
	}
}

func TestEndlessConfigErrors(t *testing.T) {
	if _, err := New(Config{Endless: true, Passes: 3}, 1, tenRecords); err == nil || err.Error() != "taskqueue: 3 passes given to queues without end" {
		t.Fatalf("endless queues of 3 passes: %v", err)
	}
}
