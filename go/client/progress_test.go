package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/trainmaster/master/go/client/clienttest"
)

// TestProgressAsTheTaskAsks: a client left at the default progress
// interval reports as often as each task asks (wire.Task.ProgressMillis),
// from the task's start, its waits doubling from wire.MinProgressInterval
// up to that (wire.DefaultProgressInterval for a task that asks nothing);
// one configured with an interval keeps it. The loop spends 2.5 s on a
// task of 20 records.
func TestProgressAsTheTaskAsks(t *testing.T) {
	for _, tc := range []struct {
		name     string
		asks     int64         // the tasks' ProgressMillis
		interval time.Duration // Config.ProgressInterval
		atLeast  int           // reports inside task 0
		atMost   int
	}{
		{"as asked", 1000, 0, 2, 3},
		{"configured", 1000, time.Hour, 0, 0},
		{"nothing asked", 0, 0, 1, 1}, // after 1 s, then 2 s later: past the task
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := fast
			cfg.ProgressInterval = tc.interval
			h := setup(t, clienttest.Options{ChunksPerTask: 5, ProgressMillis: tc.asks}, small, cfg)
			for r, err := range h.c.Records(context.Background()) {
				if err != nil {
					t.Fatal(err)
				}
				if r.Task != 0 {
					break
				}
				time.Sleep(125 * time.Millisecond) // training
			}
			reports := 0
			for _, e := range h.m.Events() {
				if e.Method == "TaskProgress" && e.Arg.Index == 0 && e.Done < 20 {
					reports++
				}
			}
			if reports < tc.atLeast || reports > tc.atMost {
				t.Errorf("%d progress reports inside task 0, want %d to %d", reports, tc.atLeast, tc.atMost)
			}
		})
	}
}
