package master

import (
	"fmt"
	"net/rpc"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/ratelog"
	"github.com/trainmaster/master/internal/taskqueue"
	"github.com/trainmaster/master/internal/trainerport"
	"github.com/trainmaster/master/internal/trainerport/porttest"
)

// TestCallsThatChangeNothingDoNotGrowTheLog (issue 23, defect 2): through
// the trainer port, on one connection, 5,000 failure reports with 1 KiB
// reasons for a task already done, then 5,000 GetTask calls repeating a
// finish already recorded, change nothing; at info level they log one line
// of each kind per ratelog.Interval (the clock stands still here), and the
// next line after the interval counts those held back. They logged one
// line per call, 5.7 MB and 854 KB.
func TestCallsThatChangeNothingDoNotGrowTheLog(t *testing.T) {
	const calls = 5000
	clock := newFakeClock()
	c, out := logPort(t, Config{Clock: clock})
	var done, held wire.Task
	if err := c.Call("Master.GetTask", wire.Task{Trainer: "a"}, &done); err != nil {
		t.Fatal(err)
	}
	done.Trainer = "a"
	if err := c.Call("Master.GetTask", done, &held); err != nil { // done's finish recorded
		t.Fatal(err)
	}

	before := len(out.String())
	failure := done
	failure.Error = strings.Repeat("x", wire.MaxErrorBytes)
	failAll := func(n int) {
		t.Helper()
		for range n {
			var rep wire.Report
			if err := c.Call("Master.TaskFailed", failure, &rep); err != nil || rep != wire.AlreadyDone {
				t.Fatalf("failure of a task done: %v, %v; want %v", rep, err, wire.AlreadyDone)
			}
		}
	}
	repeatAll := func(n int) {
		t.Helper()
		for range n {
			var again wire.Task
			if err := c.Call("Master.GetTask", done, &again); err != nil || again.Index != held.Index || again.Epoch != held.Epoch {
				t.Fatalf("GetTask repeating a finish: task %d epoch %d, %v; want task %d epoch %d", again.Index, again.Epoch, err, held.Index, held.Epoch)
			}
		}
	}
	failAll(calls)
	repeatAll(calls)
	grown := out.String()[before:]
	// One line of each kind, the failure's carrying the reason.
	if lines, bound := strings.Count(grown, "\n"), 2; lines > bound || len(grown) > wire.MaxErrorBytes+2*512 {
		t.Fatalf("%d calls that change nothing logged %d lines, %d bytes; want at most %d lines, %d bytes:\n%.2000s",
			2*calls, lines, len(grown), bound, wire.MaxErrorBytes+2*512, grown)
	}

	clock.Advance(ratelog.Interval)
	failAll(1)
	repeatAll(1)
	for _, msg := range []string{`msg="failure report ignored: already done"`, `msg="GetTask retried after its answer was lost: the same task handed again"`} {
		if n := strings.Count(out.String(), msg+" "); n != 2 {
			t.Errorf("%d lines %s, want 2", n, msg)
		}
	}
	if n := strings.Count(out.String(), "suppressed=4999"); n != 2 {
		t.Errorf("%d lines count the 4999 held back, want 2:\n%s", n, out.String()[before:])
	}
}

// TestFailuresLogABurstPerInterval: failure reports that send tasks back
// change something each time, but a client can make them as fast as the
// master commits: at most FailureLinesBurst lines of them per
// ratelog.Interval (the clock stands still here), the next counting those
// held back; the Observer still hears of every one.
func TestFailuresLogABurstPerInterval(t *testing.T) {
	const failures = 3 * FailureLinesBurst
	clock := newFakeClock()
	obs := &countingObserver{}
	c, out := logPort(t, Config{Clock: clock, Observer: obs, Queue: taskqueue.Config{Passes: 1, MaxTimeouts: failures + 1}})
	before := len(out.String())
	for range failures {
		var task wire.Task
		if err := c.Call("Master.GetTask", wire.Task{Trainer: "a"}, &task); err != nil {
			t.Fatal(err)
		}
		task.Trainer, task.Error = "a", "cannot train"
		var rep wire.Report
		if err := c.Call("Master.TaskFailed", task, &rep); err != nil || rep != wire.Recorded {
			t.Fatalf("failure report: %v, %v", rep, err)
		}
	}
	if n := strings.Count(out.String()[before:], "failed; back in todo"); n != FailureLinesBurst {
		t.Errorf("%d failures logged %d lines, want %d", failures, n, FailureLinesBurst)
	}
	if n := obs.retried.Load(); n != failures {
		t.Errorf("the Observer heard of %d failures, want %d", n, failures)
	}
	clock.Advance(ratelog.Interval)
	var task wire.Task
	if err := c.Call("Master.GetTask", wire.Task{Trainer: "a"}, &task); err != nil {
		t.Fatal(err)
	}
	task.Trainer = "a"
	if err := c.Call("Master.TaskFailed", task, new(wire.Report)); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("suppressed=%d", failures-FailureLinesBurst); !strings.Contains(out.String(), want) {
		t.Errorf("no line counts the %d held back (%s)", failures-FailureLinesBurst, want)
	}
}

// countingObserver counts the Observer's Retried calls.
type countingObserver struct {
	noObserver
	retried atomic.Int64
}

func (o *countingObserver) Retried(string, TaskEvent, RetryCause) { o.retried.Add(1) }

// logPort serves a service of cfg, logging at info level to the Log it
// returns, on a trainer port, with a dataset of 4 one-chunk tasks
// reported; it returns a connection to the port.
func logPort(t *testing.T, cfg Config) (*rpc.Client, *porttest.Log) {
	t.Helper()
	out := &porttest.Log{}
	log := logrus.New()
	log.SetOutput(out)
	log.SetLevel(logrus.InfoLevel)
	cfg.ChunksPerTask, cfg.Log = 1, log
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	c, err := rpc.Dial("tcp", startPort(t, s, trainerport.Config{}).addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Call("Master.ReportDataset", []string{writeDataset(t, t.TempDir(), 1, 4)}, new(int)); err != nil {
		t.Fatal(err)
	}
	return c, out
}
