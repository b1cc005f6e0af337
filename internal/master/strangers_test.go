package master

import (
	"fmt"
	"testing"
	"time"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/taskqueue"
	"github.com/trainmaster/master/internal/trainerport"
)

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
			task := holder.GetTask(wire.Task{})
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
				if rep := dialTrainer(t, p.addr, name).Progress(task, 12); rep.Report != wire.Superseded {
					t.Fatalf("the report of %q for the holder's task: %v, want superseded", name, rep.Report)
				}
			}
			if rep := holder.Progress(task, 3); rep.Report != wire.Recorded {
				t.Fatalf("the holder's report: %v", rep.Report)
			}
			if rep := holder.Failed(task, "the trainer's disk"); rep != wire.Recorded {
				t.Fatalf("the holder's failure report: %v", rep)
			}
			if again := holder.GetTask(wire.Task{}); again.Index != task.Index || again.From != 3 {
				t.Fatalf("handed out again: task %d from %d, want task %d from 3", again.Index, again.From, task.Index)
			}
		})
	}
}
