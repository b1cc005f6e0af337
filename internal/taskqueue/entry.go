package taskqueue

import (
	"fmt"
	"iter"
	"slices"
	"time"

	"github.com/trainmaster/master/go/wire"
)

// Queue says where a task is in its pass.
type Queue uint8

// The queues; the numbers are persisted.
const (
	Todo    Queue = 0
	Pending Queue = 1
	Done    Queue = 2
	Failed  Queue = 3
)

func (q Queue) String() string {
	switch q {
	case Todo:
		return "todo"
	case Pending:
		return "pending"
	case Done:
		return "done"
	case Failed:
		return "failed"
	}
	return fmt.Sprintf("queue(%d)", uint8(q))
}

// Entry is the state of one task in one pass.
type Entry struct {
	Pass       int       // the pass it describes; older means untouched in the current pass
	Queue      Queue     // where the task is
	Epoch      int       // dispatches of the task in this pass
	Timeouts   int       // timeouts and failure reports in this pass (the design's NumTimeout)
	Seq        int64     // order in Todo: lower is dispatched first; negative for tasks sent to the front (Release)
	Dispatched time.Time // Pending: when the current dispatch started
	Deadline   time.Time // Pending: when the current dispatch times out (may be brought forward, see Config)
	Error      string    // the last failure reason or timeout, for inspection
	// Trainer is, while the task is Pending, the name of the trainer it
	// was handed to ("" for one that sent none); empty in other queues.
	Trainer string
	// Progress is the position in the task's record order that its
	// dispatches reported reaching in this pass (progress.go): a dispatch
	// starts there. 0 when none did, and once the task is Done; a piece
	// starts with its From.
	Progress int
	// For is, while the task is Pending, the finish that the GetTask which
	// dispatched it carried (resend.go): a trainer that retries that call,
	// its answer lost, gets the same dispatch again. Zero: none.
	For Finished
	// Of, From and To bound the records an entry covers (pieces.go):
	// positions From to To-1 of task Of's record order. A task has Of
	// its own index and From 0; To 0 means to its end, and a task split
	// in its pass has the position it was cut at. A piece, an entry past
	// the dataset's tasks, is the rest of a task cut off in its pass.
	Of, From, To int
	// Rank and Group are, while a rank of a group holds the task (Pending)
	// or once it finished it (Done), the rank and its group (ranks.go):
	// the entry counts for that rank's share of the pass. Group.Ranks 0:
	// no rank's.
	Rank  int
	Group wire.Group
	// Gen is the generation of the pass state the entry belongs to
	// (checkpoint.go): an entry of another is untouched in this one.
	Gen int
}

// Record is one task's entry, as a Change carries it.
type Record struct {
	Index int
	Entry
}

// Change is what one operation changed.
type Change struct {
	Pass        int        // the pass after the change; Passes once all are done
	PassChanged bool       // the operation ended a pass
	Records     []Record   // new entries of the tasks it touched
	Gen         Generation // the pass state's generation, to store with the pass
}

// Empty reports whether the change changed nothing.
func (c Change) Empty() bool { return !c.PassChanged && len(c.Records) == 0 }

// Merge folds a later change into c, so that committing c has the effect of
// committing both in order: a task touched by both keeps its later entry,
// in the place of its first. A later change that is empty (an operation
// that changed nothing, its Pass perhaps unset) leaves c as it is. It
// returns the merged change. It takes time in the entries of both: a
// caller that merges many changes keeps a Batch.
func (c Change) Merge(later Change) Change {
	b := Batch{Change: c}
	b.Add(later)
	return b.Change
}

// Batch is changes merged in order, as Merge merges two: a committer that
// merges thousands finds a task's earlier entry in constant time.
type Batch struct {
	Change
	at map[int]int // Change.Records' positions, by task index; built once they pass scanRecords
}

// scanRecords is the most records a Batch finds an entry among by a scan:
// an operation's Merge of a few records allocates no index.
const scanRecords = 16

// Lookup returns the entry of task index the batch holds, if any.
func (b *Batch) Lookup(index int) (Record, bool) {
	i, ok := b.find(index)
	if !ok {
		return Record{}, false
	}
	return b.Records[i], true
}

// Add merges later into the batch (Merge).
func (b *Batch) Add(later Change) {
	if later.Empty() {
		return
	}
	b.Pass = later.Pass
	if later.PassChanged {
		b.Gen = later.Gen
	}
	b.PassChanged = b.PassChanged || later.PassChanged
	for _, r := range later.Records {
		if i, ok := b.find(r.Index); ok {
			b.Records[i] = r
			continue
		}
		if b.at != nil {
			b.at[r.Index] = len(b.Records)
		}
		b.Records = append(b.Records, r)
	}
}

// find returns the position of task index's entry in Records, scanning a
// few and indexing more.
func (b *Batch) find(index int) (int, bool) {
	if b.at == nil && len(b.Records) <= scanRecords {
		i := slices.IndexFunc(b.Records, func(r Record) bool { return r.Index == index })
		return i, i >= 0
	}
	if b.at == nil {
		b.at = make(map[int]int, len(b.Records))
		for i, r := range b.Records {
			b.at[r.Index] = i
		}
	}
	i, ok := b.at[index]
	return i, ok
}

// Stored yields records as Restore takes them, for stores that hold their
// entries in memory.
func Stored(records []Record) iter.Seq2[Record, error] {
	return func(yield func(Record, error) bool) {
		for _, r := range records {
			if !yield(r, nil) {
				return
			}
		}
	}
}

// part is state the queues keep beside the slots for the few entries that
// need it, owning some fields of Entry. Queues.set applies every entry's
// change to each part, Queues.entry has each fill in its fields, and
// Queues.startPass resets them (queues.go: applyParts, fillParts,
// startParts): the one path that keeps them in step.
type part interface {
	// apply keeps the part in step with a task's new entry e (old: the
	// one it replaces); it is called before the slot changes, and
	// changes neither entry.
	apply(task int, old, e *Entry)
	// fill sets the fields the part owns on a task's entry of the
	// current pass, read from its slot.
	fill(task int, e *Entry)
	// startPass forgets the entries of the pass that ended.
	startPass()
}
