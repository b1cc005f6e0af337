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
//
// Only named trainers are tracked: those that send no name (wire.Unnamed)
// cannot be told apart, and are served as before names existed.
//
// Memory: holders has an entry per pending task, holding one per trainer
// holding tasks, avoid one per task sent back by a timeout and not yet
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

// hold notes that task is pending with trainer.
func (q *Queues) hold(task int, trainer string) {
	if !tracked(trainer) {
		return
	}
	q.holders[task] = trainer
	h := q.holding[trainer]
	if h == nil {
		h = &holding{}
		q.holding[trainer] = h
	}
	h.tasks++
}

// unhold notes that task is no longer pending with its holder.
func (q *Queues) unhold(task int) {
	trainer, ok := q.holders[task]
	if !ok {
		return
	}
	delete(q.holders, task)
	if h := q.holding[trainer]; h != nil {
		if h.tasks--; h.tasks <= 0 {
			delete(q.holding, trainer)
		}
	}
}

// depth returns how many tasks trainer holds, as a deadline allows for.
func (q *Queues) depth(trainer string) int { return min(q.Holding(trainer), maxDepth) }

// Holding returns how many pending tasks trainer holds.
func (q *Queues) Holding(trainer string) int {
	if h := q.holding[trainer]; h != nil {
		return h.tasks
	}
	return 0
}

// started returns when the trainer holding e started on it: its dispatch,
// or its trainer's last finish after that (the task waited behind it).
func (q *Queues) started(e Entry) time.Time {
	if h := q.holding[e.Trainer]; h != nil && h.lastFinish > nanos(e.Dispatched) {
		return fromNanos(h.lastFinish)
	}
	return e.Dispatched
}

// finishedBy notes that trainer finished a task at now.
func (q *Queues) finishedBy(trainer string, now time.Time) {
	if h := q.holding[trainer]; h != nil {
		h.lastFinish = nanos(now)
	}
}

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
		if a, ok := q.avoid[it.task]; ok && a.trainer == trainer && now.Before(a.until) {
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
	for task, holder := range q.holders {
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
	out := make(map[string]int, len(q.holding))
	for name, h := range q.holding {
		out[name] = h.tasks
	}
	return out
}
