package client_test

import (
	"context"
	"errors"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/trainmaster/master/go/client"
	"github.com/trainmaster/master/go/client/clienttest"
	"github.com/trainmaster/master/go/wire"
)

// A task that cannot be read is reported failed, naming what went wrong,
// and none of its records is yielded; the other tasks are.
func TestUnreadableTaskIsFailed(t *testing.T) {
	// Tasks of 3 chunks: task 1 is chunks 3-5 of the first file.
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, h *harness)
		cfg    func(*client.Config)
		want   []string // in the failure report
	}{{
		name:   "corrupt chunk",
		damage: func(t *testing.T, h *harness) { clienttest.CorruptChunk(t, h.paths[0], 4) },
		want:   []string{"task 1 block 1", "part-000.recordio", "chunk 4", "checksum mismatch"},
	}, {
		name: "file removed",
		damage: func(t *testing.T, h *harness) {
			if err := os.Remove(h.paths[0]); err != nil {
				t.Fatal(err)
			}
		},
		want: []string{"task 0 block 0", "part-000.recordio", "no such file"},
	}, {
		name: "injected failure",
		cfg: func(c *client.Config) {
			c.Inject = func(task wire.Task) error {
				if task.Index == 1 {
					return errors.New("injected for the test")
				}
				return nil
			}
		},
		want: []string{"task 1: injected for the test"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := fast
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			ds := dataset{files: 2, records: 24, perChunk: 4} // 6 chunks a file
			h := setup(t, clienttest.Options{ChunksPerTask: 3}, ds, cfg)
			want := taskRecords(t, h.m) // before any damage
			if tc.damage != nil {
				tc.damage(t, h)
			}
			recs, errs := loop{}.run(t, context.Background(), h.m, h.c)
			if len(errs) > 0 {
				t.Fatalf("errors: %v", errs)
			}
			var failed []clienttest.Event
			for _, e := range h.m.Events() {
				if e.Method == "TaskFailed" {
					failed = append(failed, e)
				}
			}
			if len(failed) == 0 {
				t.Fatal("no task reported failed")
			}
			bad := map[int]bool{}
			for _, e := range failed {
				bad[e.Arg.Index] = true
				if e.Report != wire.Recorded {
					t.Errorf("failure of task %d: %v", e.Arg.Index, e.Report)
				}
			}
			for _, w := range tc.want {
				if !strings.Contains(failed[0].Arg.Error, w) {
					t.Errorf("failure report %q does not say %q", failed[0].Arg.Error, w)
				}
			}
			// Every other task is delivered, whole, once.
			done := runs(t, recs, want)
			delivered := map[int]bool{}
			for _, d := range done {
				if bad[d.Index] || delivered[d.Index] {
					t.Errorf("task %d delivered (failed: %v)", d.Index, bad[d.Index])
				}
				delivered[d.Index] = true
			}
			if len(delivered)+len(bad) != len(want) {
				t.Errorf("%d tasks delivered and %d failed of %d", len(delivered), len(bad), len(want))
			}
		})
	}
}

func TestAllPassesDoneEndsCleanly(t *testing.T) {
	t.Run("at once", func(t *testing.T) {
		h := setup(t, clienttest.Options{}, small, fast)
		h.m.Fail("GetTask", wire.TextAllDone, 1)
		recs, errs := loop{}.run(t, context.Background(), h.m, h.c)
		if len(recs) != 0 || len(errs) != 0 {
			t.Fatalf("%d records and errors %v, want none", len(recs), errs)
		}
	})
	t.Run("with consumed tasks not reported", func(t *testing.T) {
		// The master says all done when the client asks with the finish of
		// task 1: that finish and the one of the prefetched task 2 are left
		// to report with TaskFinished.
		h := setup(t, clienttest.Options{}, small, fast)
		l := loop{hooks: map[int]func(){7: func() {
			waitFor(t, "task 2 dispatched", func() bool { return dispatched(h.m, 2) })
			h.m.Fail("GetTask", wire.TextAllDone, 1)
		}}}
		recs, errs := l.run(t, context.Background(), h.m, h.c)
		if len(errs) != 0 {
			t.Fatal(errs)
		}
		if len(recs) != 3*4 {
			t.Errorf("%d records, want the 3 tasks fetched", len(recs))
		}
		for task := range 3 {
			if !h.m.Finished(0, task) {
				t.Errorf("task %d consumed but not reported finished", task)
			}
		}
	})
}

func TestWaitsForTheDataset(t *testing.T) {
	checkGoroutines(t)
	m := clienttest.Start(t, clienttest.Options{})
	paths, _ := clienttest.WriteFiles(t, t.TempDir(), 1, 8, 4)
	c := client.New(client.Static(m.Addr()), fast)
	defer c.Close()
	// Another trainer reports the dataset once this one has been told twice
	// that there is none.
	go func() {
		for countCalls(m, "GetTask") < 2 {
			time.Sleep(time.Millisecond)
		}
		other := client.New(client.Static(m.Addr()), fast)
		defer other.Close()
		if err := other.ReportDataset(context.Background(), paths); err != nil {
			t.Error(err)
		}
	}()
	recs, errs := loop{}.run(t, context.Background(), m, c)
	if len(errs) > 0 || len(recs) != 8 {
		t.Fatalf("%d records, errors %v", len(recs), errs)
	}
	if e := m.Events()[0]; e.Method != "GetTask" || e.Err != wire.TextNoDataset {
		t.Errorf("first call: %+v", e)
	}
}

func TestReportDatasetError(t *testing.T) {
	checkGoroutines(t)
	m := clienttest.Start(t, clienttest.Options{})
	c := client.New(client.Static(m.Addr()), fast)
	defer c.Close()
	err := c.ReportDataset(context.Background(), []string{"/nonexistent/*.recordio"})
	if err == nil || !strings.Contains(err.Error(), "Master.ReportDataset: pattern \"/nonexistent/*.recordio\" matches no file") {
		t.Fatalf("got %v", err)
	}
}

// Cancelling the context ends the loop promptly, wherever the client is,
// with the context's error yielded once.
func TestContextEndsTheLoop(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, h *harness) // before the loop
		// at record n (or before the loop when n < 0), end the context
		at      int
		timeout bool // a deadline instead of cancel
	}{
		{name: "in the loop body", at: 5},
		{name: "waiting for a task", at: -1, setup: func(t *testing.T, h *harness) { h.m.Fail("GetTask", wire.TextNoTask, 1000) }},
		{name: "call without reply", at: -1, setup: func(t *testing.T, h *harness) { t.Cleanup(h.m.Gate("GetTask")) }},
		{name: "master unreachable", at: -1, setup: func(t *testing.T, h *harness) { h.m.Stop() }},
		{name: "deadline in a call without reply", at: -1, timeout: true, setup: func(t *testing.T, h *harness) { t.Cleanup(h.m.Gate("GetTask")) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := setup(t, clienttest.Options{}, small, fast)
			if tc.setup != nil {
				tc.setup(t, h)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var ended time.Time
			end := func() { ended = time.Now(); cancel() }
			if tc.timeout {
				ctx, cancel = context.WithTimeout(ctx, 50*time.Millisecond)
				defer cancel()
				ended = time.Now().Add(50 * time.Millisecond)
			} else if tc.at < 0 {
				time.AfterFunc(50*time.Millisecond, end)
			}
			l := loop{hooks: map[int]func(){}}
			if tc.at >= 0 {
				l.hooks[tc.at] = end
			}
			recs, errs := l.run(t, ctx, h.m, h.c)
			if len(errs) != 1 || !errors.Is(errs[0], ctx.Err()) || ctx.Err() == nil {
				t.Fatalf("errors %v, want %v once", errs, ctx.Err())
			}
			if took := time.Since(ended); took > time.Second {
				t.Errorf("loop ended %v after the context", took)
			}
			if tc.at >= 0 && len(recs) != tc.at+1 {
				t.Errorf("%d records, want none after the cancel", len(recs))
			}
			if len(recs) > 0 && h.m.Finished(0, recs[len(recs)-1].task) {
				t.Error("the interrupted task was reported finished")
			}
		})
	}
}

func TestCloseEndsTheLoop(t *testing.T) {
	h := setup(t, clienttest.Options{}, small, fast)
	recs, errs := loop{hooks: map[int]func(){3: func() { h.c.Close() }}}.run(t, context.Background(), h.m, h.c)
	if len(errs) != 1 || !errors.Is(errs[0], client.ErrClosed) {
		t.Fatalf("errors %v, want ErrClosed once", errs)
	}
	if len(recs) > 4 {
		t.Errorf("%d records after Close in the first task", len(recs))
	}
	if err := h.c.ReportDataset(context.Background(), h.paths); !errors.Is(err, client.ErrClosed) {
		t.Errorf("ReportDataset after Close: %v", err)
	}
}

// waitFor waits a bounded time for cond.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func dispatched(m *clienttest.Master, task int) bool {
	for _, e := range m.Events() {
		if e.Method == "GetTask" && e.Err == "" && e.Reply.Index == task {
			return true
		}
	}
	return false
}

// However a loop ends, its prefetch goroutine is gone when it returns, even
// though the client stays open.
func TestLoopEndStopsPrefetch(t *testing.T) {
	for _, tc := range []struct {
		name    string
		l       func(h *harness, cancel func()) loop
		before  func(h *harness)
		wantErr string
	}{
		{name: "all passes done", l: func(*harness, func()) loop { return loop{} }},
		{name: "break", l: func(*harness, func()) loop { return loop{breakAfter: 5} }},
		{name: "cancel", l: func(_ *harness, cancel func()) loop { return loop{hooks: map[int]func(){5: cancel}} },
			wantErr: "context canceled"},
		{name: "unexpected answer", l: func(*harness, func()) loop { return loop{} },
			before:  func(h *harness) { h.m.Fail("GetTask", "the master is confused", 1) },
			wantErr: "Master.GetTask: the master is confused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := setup(t, clienttest.Options{}, small, fast)
			if tc.before != nil {
				tc.before(h)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			before := runtime.NumGoroutine() // the connection is up: only the loop's own count
			_, errs := tc.l(h, cancel).run(t, ctx, h.m, h.c)
			if (len(errs) > 0) != (tc.wantErr != "") || len(errs) > 0 && (len(errs) > 1 || errs[0].Error() != tc.wantErr) {
				t.Errorf("errors %v, want %q", errs, tc.wantErr)
			}
			waitFor(t, "the loop's goroutines to end", func() bool { return runtime.NumGoroutine() <= before })
		})
	}
}

// A call that gives up retrying because its context ended says why, how
// many attempts it made and the last failure, and errors.Is sees the
// context's error through it.
func TestCallGivesUpWithItsContext(t *testing.T) {
	m := clienttest.Start(t, clienttest.Options{})
	m.Stop() // every dial is refused
	cfg := fast
	cfg.MinBackoff, cfg.MaxBackoff = time.Minute, time.Minute // one attempt, then the wait the context cuts short
	c := client.New(client.Static(m.Addr()), cfg)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := c.GetTask(ctx, wire.Task{})
	want := "Master.GetTask: context deadline exceeded (after 1 attempts, the last: "
	if !errors.Is(err, context.DeadlineExceeded) || err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("GetTask: %v, want %q... matching context.DeadlineExceeded", err, want)
	}
}
