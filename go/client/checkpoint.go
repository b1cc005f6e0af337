package client

import (
	"context"
	"maps"
	"slices"
	"sync"

	"github.com/trainmaster/master/go/wire"
)

// Data checkpoints (wire's checkpoint.go). A trainer that saves its model
// calls Checkpoint from inside its Records (or Pass) loop, at the record
// where the model is saved, and keeps the ID it returns with the model; a
// trainer restarting from that model calls Rewind with it before its
// first loop. A record counts as trained once the loop body has it: the
// record the body is at when it calls Checkpoint is trained, the records
// read ahead (Config.Prefetch) are not.

// trained is what this client's loops trained that the master may not
// have recorded yet: the tasks consumed whose finish it has not
// acknowledged. The task being consumed is its loop's (progress).
type trained struct {
	mu       sync.Mutex           // guards consumed and active
	consumed map[[3]int]wire.Held // (index, epoch, pass) -> the task, trained through its end
	active   *session             // the loop running, if any
}

// add notes that t was consumed through position end.
func (tr *trained) add(t wire.Task, end int) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.consumed == nil {
		tr.consumed = map[[3]int]wire.Held{}
	}
	tr.consumed[[3]int{t.Index, t.Epoch, t.Pass}] = wire.Held{Dataset: t.Dataset, Index: t.Index, Epoch: t.Epoch, Pass: t.Pass, Gen: t.Gen, Done: end}
}

// acked notes that the master answered t's finish report.
func (tr *trained) acked(t wire.Task) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	delete(tr.consumed, [3]int{t.Index, t.Epoch, t.Pass})
}

// loop notes the loop that runs (nil: none).
func (tr *trained) loop(s *session) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.active = s
}

// held returns every task trained that the master may not know of, with
// the position trained through.
func (tr *trained) held() []wire.Held {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	held := slices.Collect(maps.Values(tr.consumed))
	if tr.active != nil {
		if h, ok := tr.active.progress.current(); ok {
			held = append(held, h)
		}
	}
	return held
}

// Checkpoint takes part in the data checkpoint called name, taken by
// trainers trainers together (1: this one alone; a group: its ranks, each
// calling it at the same step), pinned if pin: it reports what this
// client trained and the master may not know yet, and returns, once every
// trainer of it reported and it is stored, its ID, the same to all. Call
// it from inside a loop's body, at the record where the model is saved.
func (c *Client) Checkpoint(ctx context.Context, name string, trainers int, pin bool) (wire.CheckpointReply, error) {
	cp := wire.Checkpoint{Name: name, Trainer: c.cfg.Name, Trainers: trainers, Pin: pin, Held: c.trained.held()}
	for i := range cp.Held {
		if cp.Held[i].Dataset == "" {
			cp.Held[i].Dataset = c.cfg.Dataset
		}
	}
	var reply wire.CheckpointReply
	err := c.call(ctx, "Checkpoint", cp, &reply)
	return reply, err
}

// Rewind takes the master back to the checkpoint id for the restart
// called restart (every trainer of the restart names the same one; the
// first call rewinds, the others find it done). Call it before the first
// loop of the restarted trainer.
func (c *Client) Rewind(ctx context.Context, id int64, restart string) (wire.RewindReply, error) {
	var reply wire.RewindReply
	err := c.call(ctx, "Rewind", wire.Rewind{ID: id, Restart: restart, Trainer: c.cfg.Name}, &reply)
	return reply, err
}
