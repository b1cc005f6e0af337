package master

import (
	"context"
	"testing"
	"time"

	"github.com/trainmaster/master/go/client"
	"github.com/trainmaster/master/internal/taskqueue"
	"github.com/trainmaster/master/internal/trainerport"
)

// TestGoTrainerResumesFromACheckpoint: a go/client trainer reading ahead
// takes a checkpoint in the middle of a task, trains on past it and dies;
// a trainer restarted from the checkpoint rewinds and trains the rest:
// what the first trained up to the checkpoint and everything the second
// trained hold every record of each pass exactly once.
func TestGoTrainerResumesFromACheckpoint(t *testing.T) {
	pattern := writeDataset(t, t.TempDir(), 2, 5) // 10 tasks of 3 records
	store, cps := NewMemoryStore(), &MemoryCheckpoints{}
	cfg := Config{ChunksPerTask: 1, Store: store, Checkpoints: cps, Queue: taskqueue.Config{Passes: 2}}
	s, _ := newService(t, cfg)
	p := startPort(t, s, trainerport.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	newClient := func(name string) *client.Client {
		return client.New(client.Static(p.addr), client.Config{Name: name, Prefetch: 2, MinBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond})
	}
	first := newClient("first")
	if err := first.ReportDataset(ctx, []string{pattern}); err != nil {
		t.Fatal(err)
	}
	model := map[string]int{} // record -> times trained into the model that goes on
	var sinceCheckpoint []string
	var id int64
	n := 0
	for rec, err := range first.Records(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		sinceCheckpoint = append(sinceCheckpoint, string(rec.Data))
		if n == 17 { // record 2 of task 5 in pass 0: the model is saved here
			reply, err := first.Checkpoint(ctx, "step-17", 1, false)
			if err != nil {
				t.Fatal(err)
			}
			id = reply.ID
			for _, r := range sinceCheckpoint {
				model[r]++
			}
			sinceCheckpoint = nil
		}
		if n == 40 {
			break // the trainer dies in pass 1; what it trained since the checkpoint is lost
		}
	}
	first.Close()

	second := newClient("second")
	defer second.Close()
	if rep, err := second.Rewind(ctx, id, "restart-1"); err != nil || !rep.Rewound {
		t.Fatalf("rewind: %+v %v", rep, err)
	}
	passes := map[string]int{}
	for rec, err := range second.Records(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		model[string(rec.Data)]++
		passes[string(rec.Data)]++
	}
	if len(model) != 30 {
		t.Fatalf("%d records in the model, want 30", len(model))
	}
	for r, times := range model {
		if times != 2 {
			t.Errorf("%s trained %d times in 2 passes", r, times)
		}
	}
}
