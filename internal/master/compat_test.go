package master

import (
	"net/rpc"
	"testing"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/taskqueue"
	"github.com/trainmaster/master/internal/trainerport"
)

// oldTask is wire.Task as trainers built before trainer names, progress
// inside a task and shuffle seeds knew it: gob matches fields by name, so
// the master must serve it unchanged.
type oldTask struct {
	Index, Epoch, Pass int
	Blocks             []wire.Block
	Error              string
}

// TestTrainerThatKnowsNoneOfIt: a trainer that sends no name, no progress
// and reads no From, To or Piece trains every task of every pass, fails one
// and gets it back, as before those existed, from a master relieving
// stragglers (an unnamed trainer is never given a piece or a backup).
func TestTrainerThatKnowsNoneOfIt(t *testing.T) {
	pattern := writeDataset(t, t.TempDir(), 1, 6)
	s, _ := newService(t, Config{ChunksPerTask: 1, Queue: taskqueue.Config{Passes: 2, Stragglers: taskqueue.StragglersSplit}})
	p := startPort(t, s, trainerport.Config{})
	rc, err := rpc.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var unused int
	if err := rc.Call("Master.ReportDataset", []string{pattern}, &unused); err != nil {
		t.Fatal(err)
	}
	done := map[int]map[int]bool{0: {}, 1: {}}
	failed := false
	var finished oldTask
	for {
		var next oldTask
		err := rc.Call("Master.GetTask", finished, &next)
		if wire.Is(err, wire.TextAllDone) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(next.Blocks) != 1 {
			t.Fatalf("task %+v", next)
		}
		finished = next
		if !failed && next.Index == 3 {
			failed = true
			var rep int
			next.Error = "cannot read"
			if err := rc.Call("Master.TaskFailed", next, &rep); err != nil || wire.Report(rep) != wire.Recorded {
				t.Fatalf("failure report: %v %v", err, wire.Report(rep))
			}
			finished = oldTask{}
			continue
		}
		done[next.Pass][next.Index] = true
	}
	if len(done[0]) != 6 || len(done[1]) != 6 || !failed {
		t.Fatalf("tasks done per pass: %d and %d (failed one: %v), want 6 and 6", len(done[0]), len(done[1]), failed)
	}
}
