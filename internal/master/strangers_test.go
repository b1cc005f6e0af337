package master

import (
	"fmt"
	"testing"
	"time"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/taskqueue"
	"github.com/trainmaster/master/internal/trainerport"
)

func (tr *trainerOn) progress(task wire.Task, done int) wire.ProgressReply {
	tr.t.Helper()
	var reply wire.ProgressReply
	p := wire.Progress{Index: task.Index, Epoch: task.Epoch, Pass: task.Pass, Trainer: tr.name, Done: done}
	if err := tr.rc.Call("Master.TaskProgress", p, &reply); err != nil {
		tr.t.Fatalf("%s: TaskProgress: %v", tr.name, err)
	}
	return reply
}

func (tr *trainerOn) failed(task wire.Task) wire.Report {
	tr.t.Helper()
	var rep int
	failed := wire.Task{Index: task.Index, Epoch: task.Epoch, Pass: task.Pass, Trainer: tr.name, Error: "the trainer's disk"}
	if err := tr.rc.Call("Master.TaskFailed", failed, &rep); err != nil {
		tr.t.Fatalf("%s: TaskFailed: %v", tr.name, err)
	}
	return wire.Report(rep)
}

// TestOnlyTheHolderMovesProgress (issue 23): through the trainer port, a
// stranger on a connection of its own reports the end of a named
// trainer's task, under its own name and under none: it is answered
// superseded and moves nothing. The holder reports 3 and fails the task,
// which is handed out again from 3: no record goes untrained. The same
// after a failover, the holder's name restored from the store.
func TestOnlyTheHolderMovesProgress(t *testing.T) {
	for _, failover := range []bool{false, true} {
		t.Run(fmt.Sprintf("failover %v", failover), func(t *testing.T) {
			pattern := writeDataset(t, t.TempDir(), 1, 4) // one task of 12 records
			cfg := Config{ChunksPerTask: 4, Store: NewMemoryStore(), Queue: taskqueue.Config{Timeout: time.Hour}}
			s, _ := newService(t, cfg)
			if err := s.ReportDataset(ctx, []string{pattern}); err != nil {
				t.Fatal(err)
			}
			p := startPort(t, s, trainerport.Config{})
			holder := dialTrainer(t, p.addr, "holder")
			task := holder.getTask(wire.Task{})
			if failover {
				s.Close()
				s, _ = newService(t, cfg)
				if err := s.Restore(ctx); err != nil {
					t.Fatal(err)
				}
				p = startPort(t, s, trainerport.Config{})
				holder = dialTrainer(t, p.addr, "holder")
			}
			for _, name := range []string{"stranger", ""} {
				if rep := dialTrainer(t, p.addr, name).progress(task, 12); rep.Report != wire.Superseded {
					t.Fatalf("the report of %q for the holder's task: %v, want superseded", name, rep.Report)
				}
			}
			if rep := holder.progress(task, 3); rep.Report != wire.Recorded {
				t.Fatalf("the holder's report: %v", rep.Report)
			}
			if rep := holder.failed(task); rep != wire.Recorded {
				t.Fatalf("the holder's failure report: %v", rep)
			}
			if again := holder.getTask(wire.Task{}); again.Index != task.Index || again.From != 3 {
				t.Fatalf("handed out again: task %d from %d, want task %d from 3", again.Index, again.From, task.Index)
			}
		})
	}
}
