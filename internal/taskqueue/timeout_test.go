package taskqueue

import (
	"testing"
	"time"

	"github.com/trainmaster/master/go/wire"
)

// TestProgressEveryOfExpectedTime: a fifth of the expected time, within
// wire.MinProgressInterval and wire.DefaultProgressInterval.
func TestProgressEveryOfExpectedTime(t *testing.T) {
	for _, tc := range []struct {
		expected float64 // seconds
		want     time.Duration
	}{
		{0, wire.MinProgressInterval},
		{1, wire.MinProgressInterval}, // a fifth of a second: the floor
		{5, time.Second},
		{7.5, 1500 * time.Millisecond},
		{20, 4 * time.Second},
		{50, wire.DefaultProgressInterval},
		{600, wire.DefaultProgressInterval}, // the ceiling
		{1e300, wire.DefaultProgressInterval},
	} {
		if got := progressEvery(tc.expected); got != tc.want {
			t.Errorf("expected %gs: every %v, want %v", tc.expected, got, tc.want)
		}
	}
}

// TestProgressEveryFollowsTheAverage: wire.DefaultProgressInterval until
// the moving average is usable, then a fifth of the records the dispatch
// has left times the average.
func TestProgressEveryFollowsTheAverage(t *testing.T) {
	sizes := func(task int) int64 { return []int64{100, 100, 100, 100, 1000}[task] }
	q, err := New(Config{MinSamples: 2, Window: 2}, 5, sizes)
	if err != nil {
		t.Fatal(err)
	}
	now := t0
	for i := range 2 {
		if got := q.ProgressEvery(4); got != wire.DefaultProgressInterval {
			t.Fatalf("after %d samples: every %v, want the default", i, got)
		}
		task, epoch := dispatch(t, q, now)
		now = now.Add(10 * time.Second) // 0.1 s per record
		if _, _, err := q.Finish(task, 0, epoch, "", now); err != nil {
			t.Fatal(err)
		}
	}
	task, epoch := dispatch(t, q, now)
	if got, want := q.ProgressEvery(task), 2*time.Second; got != want { // 100 × 0.1 s / 5
		t.Errorf("task of 100 records: every %v, want %v", got, want)
	}
	if _, _, err := q.Progress(task, 0, epoch, 60, "", now.Add(6*time.Second)); err != nil {
		t.Fatal(err)
	}
	if got := q.ProgressEvery(task); got != wire.MinProgressInterval { // 40 left: 0.8 s, under the floor
		t.Errorf("task with 40 records left: every %v, want the floor", got)
	}
	if got := q.ProgressEvery(4); got != wire.DefaultProgressInterval { // 1000 × 0.1 s / 5 = 20 s: the ceiling
		t.Errorf("task of 1000 records: every %v, want the ceiling", got)
	}
}
