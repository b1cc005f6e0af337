package main

import (
	"net/rpc"
	"strings"
	"testing"
	"time"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/ratelog"
)

// TestHostileLogStaysBounded (issue 23, defect 2): against a master
// process at -log-level info, one connection sends 5,000 failure reports
// with 1 KiB reasons for a task already done, then 5,000 GetTask calls
// repeating a finish already recorded. Neither changes anything, and each
// kind of line is logged at most once per ratelog.Interval: the log grows
// by a few lines, not by one line per call (5.7 MB and 854 KB before).
func TestHostileLogStaysBounded(t *testing.T) {
	const calls = 5000
	p, addr := startOnEtcd(t, "-dataset", writeDataset(t, 1), "-log-level", "info")
	c, err := rpc.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var done, held wire.Task
	if err := c.Call("Master.GetTask", wire.Task{Trainer: "flooder"}, &done); err != nil {
		t.Fatal(err)
	}
	done.Trainer = "flooder"
	if err := c.Call("Master.GetTask", done, &held); err != nil { // done's finish recorded
		t.Fatal(err)
	}

	before, start := len(p.logText()), time.Now()
	failure := done
	failure.Error = strings.Repeat("x", wire.MaxErrorBytes)
	for range calls {
		var rep wire.Report
		if err := c.Call("Master.TaskFailed", failure, &rep); err != nil || rep != wire.AlreadyDone {
			t.Fatalf("failure of a task done: %v, %v; want %v", rep, err, wire.AlreadyDone)
		}
	}
	for range calls {
		var again wire.Task
		if err := c.Call("Master.GetTask", done, &again); err != nil || again.Index != held.Index || again.Epoch != held.Epoch {
			t.Fatalf("GetTask repeating a finish: task %d epoch %d, %v; want task %d epoch %d", again.Index, again.Epoch, err, held.Index, held.Epoch)
		}
	}
	elapsed := time.Since(start)
	// A real failure, logged after the attack's lines: once it is read,
	// so are they.
	held.Trainer, held.Error = "flooder", "the last failure"
	var rep wire.Report
	if err := c.Call("Master.TaskFailed", held, &rep); err != nil || rep != wire.Recorded {
		t.Fatalf("failure of the task held: %v, %v", rep, err)
	}
	p.awaitLog("failed; back in todo", 10*time.Second)

	grown := p.logText()[before:]
	// Each of the two kinds at most once per interval begun, each line
	// under 2 KiB (the reason cut to 1 KiB); the last failure's line and
	// any line of the master's own besides, under 4 KiB.
	perKind := 1 + int(elapsed/ratelog.Interval)
	limited := strings.Count(grown, "failure report ignored") + strings.Count(grown, "GetTask retried after its answer was lost")
	bound := 2*perKind*2048 + 4096
	t.Logf("%d calls in %v: the log grew by %d bytes, %d lines of the attack (bound %d bytes, %d lines)",
		2*calls, elapsed.Round(time.Millisecond), len(grown), limited, bound, 2*perKind)
	if limited > 2*perKind || len(grown) > bound {
		t.Fatalf("%d calls that change nothing in %v grew the log by %d bytes, %d lines of theirs; want at most %d bytes, %d lines:\n%s",
			2*calls, elapsed, len(grown), limited, bound, 2*perKind, lastLines(grown, 10))
	}
}
