package client_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/trainmaster/master/go/client"
	"github.com/trainmaster/master/go/client/clienttest"
	"github.com/trainmaster/master/go/wire"
)

func TestRecordsEveryTaskInOrder(t *testing.T) {
	for _, tc := range []struct {
		prefetch, chunksPerTask, passes int
	}{
		{prefetch: -1, chunksPerTask: 1, passes: 1},
		{prefetch: 0, chunksPerTask: 1, passes: 2}, // default: 1
		{prefetch: 3, chunksPerTask: 2, passes: 3},
		{prefetch: 20, chunksPerTask: 3, passes: 2}, // deeper than the dataset
	} {
		t.Run(fmt.Sprintf("prefetch=%d,chunks=%d,passes=%d", tc.prefetch, tc.chunksPerTask, tc.passes), func(t *testing.T) {
			cfg := fast
			cfg.Prefetch = tc.prefetch
			h := setup(t, clienttest.Options{Passes: tc.passes, ChunksPerTask: tc.chunksPerTask}, small, cfg)
			recs, errs := loop{}.run(t, context.Background(), h.m, h.c)
			if len(errs) > 0 {
				t.Fatalf("errors: %v", errs)
			}
			want := taskRecords(t, h.m)
			checkExactlyOnce(t, recs, want, tc.passes)
			// One client alone gets the tasks in index order.
			done := runs(t, recs, want)
			for i, d := range done {
				if d.Index != i%len(want) || d.Pass != i/len(want) {
					t.Fatalf("task #%d delivered is %d of pass %d", i, d.Index, d.Pass)
				}
			}
			if !h.m.AllDone() {
				t.Error("the master is not done: some finish was not reported")
			}
		})
	}
}

// The finish of a task must reach the master only after the loop body has
// returned for its last record, even though the next task is fetched while
// it is consumed.
func TestFinishReportedOnlyAfterConsumption(t *testing.T) {
	cfg := fast
	cfg.Prefetch = 2
	h := setup(t, clienttest.Options{Passes: 2}, small, cfg)
	tasks := len(h.m.Tasks())
	n := 0
	for rec, err := range h.c.Records(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		if !rec.Last {
			continue
		}
		// Give an eager client time to report: the prefetch goroutine is
		// free to call the master meanwhile.
		for deadline := time.Now().Add(20 * time.Millisecond); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			if h.m.Finished(rec.Pass, rec.Task) {
				t.Fatalf("task %d of pass %d reported finished before the body returned from its last record", rec.Task, rec.Pass)
			}
		}
	}
	if want := 2 * small.files * small.records; n != want {
		t.Fatalf("%d records, want %d", n, want)
	}
	for p := range 2 {
		for i := range tasks {
			if !h.m.Finished(p, i) {
				t.Errorf("task %d of pass %d never reported finished", i, p)
			}
		}
	}
	carried := 0
	for _, e := range h.m.Events() {
		if e.Method == "GetTask" && e.Arg.Epoch != 0 {
			carried++
		}
	}
	if carried == 0 {
		t.Error("no finish was carried on GetTask")
	}
}

// At the end of a pass the prefetch goroutine asks for a task while the loop
// still consumes the last one, and gets "no task available". When that last
// finish is recorded, the next pass (or the end) must follow at once, not
// after the backoff.
func TestPassEndNotDelayedByBackoff(t *testing.T) {
	cfg := fast
	cfg.MinBackoff, cfg.MaxBackoff = 2*time.Second, 2*time.Second // waits of 1s to 2s
	h := setup(t, clienttest.Options{Passes: 2}, small, cfg)
	slow := func() { time.Sleep(50 * time.Millisecond) } // the goroutine asks meanwhile
	l := loop{hooks: map[int]func(){36: slow, 76: slow}} // first records of the last task of each pass
	start := time.Now()
	recs, errs := l.run(t, context.Background(), h.m, h.c)
	took := time.Since(start)
	if len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	checkExactlyOnce(t, recs, taskRecords(t, h.m), 2)
	if took >= time.Second {
		t.Errorf("two passes took %v: the client waited out a backoff after its last finish", took)
	}
	noTask := 0
	for _, e := range h.m.Events() {
		if e.Method == "GetTask" && e.Err == wire.TextNoTask {
			noTask++
		}
	}
	if noTask == 0 {
		t.Error("the client never got 'no task available': the test tests nothing")
	}
}

func TestBreakMidTaskLeavesItUnfinished(t *testing.T) {
	// Tasks of 4 records; break on the 2nd record of task 2.
	h := setup(t, clienttest.Options{Timeout: 300 * time.Millisecond}, small, fast)
	want := taskRecords(t, h.m)
	first, errs := loop{breakAfter: 2*4 + 2}.run(t, context.Background(), h.m, h.c)
	if len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	if last := first[len(first)-1]; last.task != 2 {
		t.Fatalf("broke in task %d, want 2", last.task)
	}
	for task, finished := range []bool{true, true, false} {
		if h.m.Finished(0, task) != finished {
			t.Errorf("task %d finished: %v, want %v", task, !finished, finished)
		}
	}
	// A new loop resumes; the broken task comes back when it times out.
	rest, errs := loop{}.run(t, context.Background(), h.m, h.c)
	if len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	checkExactlyOnce(t, append(first[:2*4], rest...), want, 1)
	if !h.m.AllDone() {
		t.Error("the master is not done")
	}
}

// Faults the client must ride out: the dataset must still be delivered
// exactly once per pass.
func TestTransientFaults(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opt    clienttest.Options
		cfg    func(*client.Config)
		before func(*testing.T, *harness) // after the dataset is reported
		at     map[int]func(*testing.T, *harness)
		check  func(*testing.T, *harness)
	}{{
		name: "no task available",
		before: func(t *testing.T, h *harness) {
			h.m.Fail("GetTask", wire.TextNoTask, 4)
		},
		check: checkBackoff,
	}, {
		name: "no task available mid-pass",
		at: map[int]func(*testing.T, *harness){
			10: func(t *testing.T, h *harness) { h.m.Fail("GetTask", wire.TextNoTask, 3) },
		},
		check: checkBackoff,
	}, {
		name: "master is not serving",
		before: func(t *testing.T, h *harness) {
			h.m.Fail("GetTask", wire.TextNotServing, 2)
			h.m.Fail("TaskFinished", wire.TextNotServing, 1)
		},
		check: func(t *testing.T, h *harness) {
			// One resolve to report the dataset, then one per answer.
			if n := h.resolves.Load(); n < 3 {
				t.Errorf("%d resolves, want a new one after each 'not serving'", n)
			}
		},
	}, {
		name: "dataset not reported",
		before: func(t *testing.T, h *harness) {
			h.m.Fail("GetTask", wire.TextNoDataset, 2)
		},
		check: func(t *testing.T, h *harness) {
			if n := countCalls(h.m, "ReportDataset"); n != 3 {
				t.Errorf("dataset reported %d times, want 1 and again after each 'not reported'", n)
			}
		},
	}, {
		name: "connections dropped",
		// A GetTask in flight when its connection drops may dispatch a
		// task whose answer is lost: the timeout brings it back.
		opt: clienttest.Options{Passes: 2, Timeout: time.Second},
		at: map[int]func(*testing.T, *harness){
			5:  func(t *testing.T, h *harness) { h.m.DropConns() },
			21: func(t *testing.T, h *harness) { h.m.DropConns() },
			50: func(t *testing.T, h *harness) { h.m.DropConns() },
		},
	}, {
		name: "master restarted on the same port",
		// A GetTask in flight when the master stops may dispatch a task
		// whose answer is lost: the timeout brings it back.
		opt: clienttest.Options{Passes: 2, Timeout: time.Second},
		at: map[int]func(*testing.T, *harness){
			7:  restartAfter(30 * time.Millisecond),
			33: restartAfter(0),
		},
		check: func(t *testing.T, h *harness) {
			if n := h.resolves.Load(); n < 3 {
				t.Errorf("%d resolves, want one per connection", n)
			}
		},
	}, {
		name: "call without reply",
		opt:  clienttest.Options{Timeout: time.Second},
		cfg:  func(c *client.Config) { c.CallTimeout = 50 * time.Millisecond },
		at: map[int]func(*testing.T, *harness){
			6: func(t *testing.T, h *harness) {
				release := h.m.Gate("GetTask")
				time.AfterFunc(200*time.Millisecond, release)
			},
		},
		check: func(t *testing.T, h *harness) {
			if n := h.resolves.Load(); n < 3 {
				t.Errorf("%d resolves, want a new connection after each timeout", n)
			}
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := fast
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			h := setup(t, tc.opt, small, cfg)
			if tc.before != nil {
				tc.before(t, h)
			}
			l := loop{hooks: map[int]func(){}}
			for n, f := range tc.at {
				l.hooks[n] = func() { f(t, h) }
			}
			recs, errs := l.run(t, context.Background(), h.m, h.c)
			if len(errs) > 0 {
				t.Fatalf("errors: %v", errs)
			}
			checkExactlyOnce(t, recs, taskRecords(t, h.m), max(tc.opt.Passes, 1))
			if tc.check != nil {
				tc.check(t, h)
			}
		})
	}
}

func restartAfter(d time.Duration) func(*testing.T, *harness) {
	return func(t *testing.T, h *harness) {
		h.m.Stop()
		time.AfterFunc(d, func() {
			if err := h.m.Restart(); err != nil {
				t.Errorf("restart: %v", err)
			}
		})
	}
}

// checkBackoff checks that after each "no task available" the client waited
// at least half the minimum backoff before asking again, unless it reported
// meanwhile a finish that the master recorded.
func checkBackoff(t *testing.T, h *harness) {
	t.Helper()
	var prev *clienttest.Event
	waits, recorded := 0, false
	for _, e := range h.m.Events() {
		if e.Method == "TaskFinished" && e.Report == wire.Recorded {
			recorded = true
		}
		if e.Method != "GetTask" {
			continue
		}
		if prev != nil && prev.Err == wire.TextNoTask && !recorded {
			waits++
			if gap := e.At.Sub(prev.At); gap < fast.MinBackoff/2 {
				t.Errorf("asked again %v after 'no task available'", gap)
			}
		}
		prev, recorded = &e, false
	}
	if waits == 0 {
		t.Error("the client never waited after 'no task available'")
	}
}

func countCalls(m *clienttest.Master, method string) int {
	n := 0
	for _, e := range m.Events() {
		if e.Method == method {
			n++
		}
	}
	return n
}
