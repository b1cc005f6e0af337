package wire

// Caller is the argument of a call made for a named trainer (GetTask,
// TaskFinished and TaskFailed take a task, TaskProgress a Progress): the
// trainer port (internal/trainerport) follows which trainers a connection
// carries by it, knowing nothing else of the service it serves.
type Caller interface {
	// CallerName returns the trainer's name as TrainerName keeps it, or ""
	// when the call names no trainer.
	CallerName() string
}

// CallerName is what a Caller whose trainer sent name returns: "" for an
// empty name or Unnamed, which name no trainer in particular.
func CallerName(name string) string {
	if kept := TrainerName(name); kept != Unnamed {
		return kept
	}
	return ""
}

// CallerName returns the name of the trainer reporting, "" if none.
func (p Progress) CallerName() string { return CallerName(p.Trainer) }

// CallerName returns the name of the trainer taking the checkpoint, "" if
// none.
func (c Checkpoint) CallerName() string { return CallerName(c.Trainer) }

// CallerName returns the name of the trainer rewinding, "" if none.
func (r Rewind) CallerName() string { return CallerName(r.Trainer) }
