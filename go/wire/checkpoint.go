package wire

import "github.com/pkg/errors"

// Data checkpoints: the data position saved with the model. A job that
// saves its model every N steps and restarts from the last save after a
// crash must also take the master back to what that model was trained on:
// every record trained by then is not handed out again in its pass, every
// other record is, once.
//
//	Master.Checkpoint(c Checkpoint, reply *CheckpointReply) error
//	Master.Rewind(r Rewind, reply *RewindReply) error
//
// What "trained" means: a record a trainer's loop received counts as
// trained once the loop asks for the next one (or takes a checkpoint); a
// record read ahead (prefetch, a DataLoader's workers) does not. The
// clients report finishes and progress by that rule, so the master's Done
// set and positions are what the model was trained on.
//
// Checkpoint: at the step where the model is saved, every trainer of the
// job (one process, or the W ranks of a group) calls Checkpoint with the
// same Name and Trainers, the number of trainers taking it, and in Held
// every task it holds or held since its last checkpoint with the position
// it trained through. Once all Trainers reported, the master snapshots
// every dataset of the job (per dataset: its pass, and of that pass what
// is trained) and commits it, fenced, under an ID, keeping the last
// -checkpoints-kept and every pinned one; each caller is answered the ID
// and the IDs kept. A call repeated (a retry, or at a new leader after a
// failover) is answered the stored ID. Trainers missing after the
// master's -checkpoint-wait: every caller is answered
// TextCheckpointIncomplete and nothing is stored.
//
// Rewind: every rank of a job restarting from a model checkpoint calls
// Rewind with the checkpoint's ID and the same Restart (a name of the
// restart: one per restart); the first call takes every dataset of the
// job back to the checkpoint, the others (and retries) find it done. A
// rewind starts a new generation of the pass state (Task.Gen): reports
// of dispatches of an older generation are answered StalePass.

// Checkpoint is what Master.Checkpoint carries.
type Checkpoint struct {
	// Name names the checkpoint, the same from every trainer taking it
	// (e.g. the model's step, with the restart it belongs to): at most
	// MaxCheckpointNameBytes.
	Name string
	// Trainer is the caller's name (as in Task).
	Trainer string `json:",omitempty"`
	// Trainers is how many trainers take the checkpoint together: 1 for
	// a process alone, W for the ranks of a group; at most MaxRanks.
	Trainers int
	// Pin keeps the checkpoint beyond -checkpoints-kept.
	Pin bool `json:",omitempty"`
	// Held is every task the trainer holds, or held since its last
	// checkpoint, with the position it trained through: at most MaxHeld.
	Held []Held `json:",omitempty"`
}

// Held is one task a trainer holds or held: the dispatch as GetTask
// handed it out, and Done, the position in the task's record order
// (progress.go) before which every record was trained.
type Held struct {
	Dataset            string `json:",omitempty"`
	Index, Epoch, Pass int
	Gen                int `json:",omitempty"`
	Done               int
}

// CheckpointReply is Master.Checkpoint's answer.
type CheckpointReply struct {
	ID   int64   // the checkpoint's, the same to every trainer of it
	Kept []int64 // the checkpoints kept after it, oldest first
}

// Rewind is what Master.Rewind carries.
type Rewind struct {
	ID      int64  // the checkpoint to go back to
	Restart string // names the restart: every rank of it sends the same; at most MaxCheckpointNameBytes
	Trainer string `json:",omitempty"`
}

// RewindReply is Master.Rewind's answer.
type RewindReply struct {
	Rewound  bool     // this call rewound; false: an earlier call of the same restart did
	Datasets []string // the datasets taken back, sorted
}

// Limits of the checkpoint calls.
const (
	MaxCheckpointNameBytes = 128
	MaxHeld                = 1024
)

// The error texts of checkpoints (the contract's, like wire.Text*).
const (
	// TextUnknownCheckpoint: Rewind names a checkpoint the master does
	// not keep (never taken, or dropped past -checkpoints-kept); the
	// message names the ones kept.
	TextUnknownCheckpoint = "unknown checkpoint"
	// TextCheckpointIncomplete: not every trainer of the checkpoint
	// reported within the master's -checkpoint-wait, or the reports
	// disagree (Trainers); nothing was stored. Take it again.
	TextCheckpointIncomplete = "checkpoint incomplete"
	// TextBadCheckpoint: the call is malformed (a name too long or empty,
	// too many held tasks, a position past a task's end); final for it.
	TextBadCheckpoint = "bad checkpoint"
)

// The contract's errors of checkpoints, one per text.
var (
	ErrUnknownCheckpoint    = errors.New(TextUnknownCheckpoint)
	ErrCheckpointIncomplete = errors.New(TextCheckpointIncomplete)
	ErrBadCheckpoint        = errors.New(TextBadCheckpoint)
)

// Check returns an error carrying TextBadCheckpoint when c is outside the
// contract's bounds.
func (c Checkpoint) Check() error {
	switch {
	case c.Name == "" || len(c.Name) > MaxCheckpointNameBytes:
		return WithKind(ErrBadCheckpoint, errors.Errorf("a name of %d bytes (want 1 to %d)", len(c.Name), MaxCheckpointNameBytes))
	case c.Trainers < 1 || c.Trainers > MaxRanks:
		return WithKind(ErrBadCheckpoint, errors.Errorf("checkpoint %q taken by %d trainers (want 1 to %d)", c.Name, c.Trainers, MaxRanks))
	case len(c.Held) > MaxHeld:
		return WithKind(ErrBadCheckpoint, errors.Errorf("checkpoint %q: %d tasks held (at most %d)", c.Name, len(c.Held), MaxHeld))
	}
	for _, h := range c.Held {
		if h.Index < 0 || h.Epoch < 1 || h.Pass < 0 || h.Gen < 0 || h.Done < 0 {
			return WithKind(ErrBadCheckpoint, errors.Errorf("checkpoint %q: task %d epoch %d pass %d gen %d done %d", c.Name, h.Index, h.Epoch, h.Pass, h.Gen, h.Done))
		}
	}
	return nil
}

// Check returns an error carrying TextBadCheckpoint when r is outside the
// contract's bounds.
func (r Rewind) Check() error {
	if r.ID < 1 || r.Restart == "" || len(r.Restart) > MaxCheckpointNameBytes {
		return WithKind(ErrBadCheckpoint, errors.Errorf("rewind to checkpoint %d for restart of %d bytes (want an ID from 1, a restart of 1 to %d bytes)", r.ID, len(r.Restart), MaxCheckpointNameBytes))
	}
	return nil
}
