package taskqueue

import (
	"fmt"
	"slices"
	"time"

	"github.com/trainmaster/master/go/wire"
)

// Who holds what. The queues know, for every pending task, the trainer it
// was handed to (Entry.Trainer, stored with the entry so that a new master
// knows it too). Three things follow from it:
//
//   - Prefetch: a trainer that asks while it still holds tasks is reading
//     ahead; the new task waits behind the ones it holds, so its timeout is
//     multiplied by 1 plus their number (the depth), and the moving average
//     counts a task from when its trainer started it, the finish of the
//     task before it, not from its dispatch.
//   - Reassignment: a task that timed out waits Config.Reassign for a
//     trainer other than the one it was taken from before that one may
//     have it again (the slow trainer, out of backoff first, would
//     otherwise take it back).
//   - A lost trainer's tasks go back to the front of Todo at once
//     (Release), without counting as timeouts.
//   - Progress: only the holder of a task's current dispatch moves its
//     position (holds), so that a position never passes records its
//     holder has not reported, and another caller's report is no sign of
//     the holder's life to the straggler policy.
//
// Only named trainers are tracked: those that send no name (wire.Unnamed)
// cannot be told apart: they hold nothing, and are kept from no task. A
// dispatch handed to one takes progress from any caller that sends no
// name, and from no named one.
//
// Memory (holders below): an entry per pending task, one per trainer
// holding tasks, one per task sent back by a timeout and not yet
// dispatched again; all bounded by the number of tasks.

// holding is what the queues keep of a trainer while it holds tasks.
type holding struct {
	tasks      int   // pending tasks it holds
	lastFinish int64 // Unix nanoseconds of its latest finish while holding tasks; 0: none
}

// avoidance keeps a task that timed out from the trainer it was taken from
// until a deadline.
type avoidance struct {
	trainer string
	until   time.Time
}

// maxAvoidScan bounds how far past the head of Todo Dispatch looks for a
// task the asking trainer is not kept from.
const maxAvoidScan = 64

// maxDepth caps the depth a deadline allows for.
const maxDepth = 255

// tracked reports whether the queues keep what trainer holds.
func tracked(trainer string) bool { return trainer != "" && trainer != wire.Unnamed }

// holds reports whether trainer (a caller's name; "" or wire.Unnamed for
// none) is the holder of the pending entry e's dispatch, as Entry.Trainer
// names it: "" for a dispatch handed to an unnamed trainer.
func holds(e Entry, trainer string) bool {
	if !tracked(trainer) {
		trainer = ""
	}
	return e.Trainer == trainer
}

// holders owns Entry.Trainer: who holds which pending task, what each
// trainer holds, and which trainer a task that timed out is kept from.
// Invariants: byTask has exactly the Pending entries with a tracked
// Trainer; byTrainer has a trainer while it holds tasks, with their
// number; avoid has no Pending task (a dispatch takes its task out).
type holders struct {
	byTask    map[int]string      // pending task -> its trainer
	byTrainer map[string]*holding // trainer -> what it holds
	avoid     map[int]avoidance   // task sent back by a timeout -> the trainer it was taken from
}

func newHolders() holders {
	return holders{byTask: map[int]string{}, byTrainer: map[string]*holding{}, avoid: map[int]avoidance{}}
}

// apply moves a task from its old holder to its new one; a dispatch ends
// the wait of a task kept from a trainer. The same dispatch changed (its
// progress, a tighter deadline) keeps its holder and what is known of it.
func (h *holders) apply(task int, old, e *Entry) {
	same := old.Queue == Pending && e.Queue == Pending && old.Epoch == e.Epoch && old.Trainer == e.Trainer
	if old.Queue == Pending && !same {
		h.unhold(task)
	}
	if e.Queue == Pending {
		if !same {
			h.hold(task, e.Trainer)
		}
		delete(h.avoid, task)
	}
}

// fill sets the trainer of a pending entry.
func (h *holders) fill(task int, e *Entry) {
	if e.Queue == Pending {
		e.Trainer = h.byTask[task]
	}
}

// startPass forgets which tasks are kept from which trainer. No task is
// pending when a pass starts, so nobody holds one.
func (h *holders) startPass() {
	clear(h.byTask)
	clear(h.byTrainer)
	clear(h.avoid)
}

// hold notes that task is pending with trainer.
func (h *holders) hold(task int, trainer string) {
	if !tracked(trainer) {
		return
	}
	h.byTask[task] = trainer
	held := h.byTrainer[trainer]
	if held == nil {
		held = &holding{}
		h.byTrainer[trainer] = held
	}
	held.tasks++
}

// unhold notes that task is no longer pending with its holder.
func (h *holders) unhold(task int) {
	trainer, ok := h.byTask[task]
	if !ok {
		return
	}
	delete(h.byTask, task)
	if held := h.byTrainer[trainer]; held != nil {
		if held.tasks--; held.tasks <= 0 {
			delete(h.byTrainer, trainer)
		}
	}
}

// held returns how many pending tasks trainer holds.
func (h *holders) held(trainer string) int {
	if held := h.byTrainer[trainer]; held != nil {
		return held.tasks
	}
	return 0
}

// started returns when the trainer holding e started on it: its dispatch,
// or its trainer's last finish after that (the task waited behind it).
func (h *holders) started(e Entry) time.Time {
	if held := h.byTrainer[e.Trainer]; held != nil && held.lastFinish > nanos(e.Dispatched) {
		return fromNanos(held.lastFinish)
	}
	return e.Dispatched
}

// finishedBy notes that trainer finished a task at now.
func (h *holders) finishedBy(trainer string, now time.Time) {
	if held := h.byTrainer[trainer]; held != nil {
		held.lastFinish = nanos(now)
	}
}

// keepFrom keeps task, sent back to Todo, from trainer until until.
func (h *holders) keepFrom(task int, trainer string, until time.Time) {
	h.avoid[task] = avoidance{trainer: trainer, until: until}
}

// keeps reports whether task is kept from trainer at now.
func (h *holders) keeps(task int, trainer string, now time.Time) bool {
	a, ok := h.avoid[task]
	return ok && a.trainer == trainer && now.Before(a.until)
}

// depth returns how many tasks trainer holds, as a deadline allows for.
func (q *Queues) depth(trainer string) int { return min(q.Holding(trainer), maxDepth) }

// Holding returns how many pending tasks trainer holds.
func (q *Queues) Holding(trainer string) int { return q.holders.held(trainer) }

// nextFor returns the position in q.todo of the task to hand trainer at
// now: the first live one it is not kept from, within maxAvoidScan live
// tasks of the head.
func (q *Queues) nextFor(trainer string, now time.Time) (int, bool) {
	for q.todoHead < len(q.todo) && q.stale(q.todo[q.todoHead]) {
		q.todoHead++
	}
	for i, scanned := q.todoHead, 0; i < len(q.todo) && scanned < maxAvoidScan; i++ {
		it := q.todo[i]
		if q.stale(it) {
			continue
		}
		scanned++
		if q.holders.keeps(it.task, trainer, now) {
			continue
		}
		if i == q.todoHead {
			q.todoHead++
		}
		return i, true
	}
	return 0, false
}

// stale reports whether a Todo item no longer describes its task: the task
// moved on since it was queued.
func (q *Queues) stale(it todoItem) bool {
	e := q.entry(it.task)
	return e.Queue != Todo || e.Seq != it.seq
}

// Release sends every task trainer holds back to the front of Todo, as
// dispatched next: the trainer is gone (the master saw its connections
// close and it did not come back in time). Unlike a timeout it does not
// count against MaxTimeouts; the entry's Error says what happened. It
// returns the tasks released, in task order, and what changed.
func (q *Queues) Release(trainer string) (released []int, ch Change) {
	ch.Pass = q.pass
	if !tracked(trainer) {
		return nil, ch
	}
	for task, holder := range q.holders.byTask {
		if holder == trainer {
			released = append(released, task)
		}
	}
	slices.Sort(released)
	// Front seqs decrease as they are handed out: release from the last,
	// so that the lowest task ends first in Todo.
	for _, task := range slices.Backward(released) {
		e := q.entry(task)
		e.Error = fmt.Sprintf("dispatch %d: trainer %s lost", e.Epoch, trainer)
		e.Queue, e.Seq, e.Trainer = Todo, q.nextFront, ""
		e.Dispatched, e.Deadline = time.Time{}, time.Time{}
		q.nextFront--
		ch.Records = append(ch.Records, q.change(task, e).Records...)
	}
	slices.Reverse(ch.Records)
	return released, ch
}

// Holders returns the trainers holding tasks now, with how many each holds.
func (q *Queues) Holders() map[string]int {
	out := make(map[string]int, len(q.holders.byTrainer))
	for name, h := range q.holders.byTrainer {
		out[name] = h.tasks
	}
	return out
}
