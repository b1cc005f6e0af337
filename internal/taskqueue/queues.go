package taskqueue

import (
	"container/heap"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/pkg/errors"

	"github.com/trainmaster/master/go/wire"
)

// Errors of the operations. Reports that change nothing are not errors: they
// return a wire.Report saying why.
var (
	ErrNoTask      = errors.New("taskqueue: no task available")
	ErrAllDone     = errors.New("taskqueue: all passes done")
	ErrBadReport   = errors.New("taskqueue: bad report")
	ErrFuturePass  = errors.New("taskqueue: pass has not started")
	ErrFutureEpoch = errors.New("taskqueue: epoch from the future")
)

// ErrPassesRunning is AddPasses's error while a pass runs.
var ErrPassesRunning = errors.New("taskqueue: passes still running")

// Queues holds the state of every task of a dataset: a slot per entry,
// and beside the slots the parts that few entries need. Every change of
// an entry goes through set, every pass starts through startPass.
type Queues struct {
	cfg      Config
	records  func(task int) int64
	tasks    int // the dataset's; entries past them are pieces (pieces.go)
	pass     int
	entries  []slot
	reasons  map[int]string // Entry.Error of the current pass, where not empty
	counts   [4]int
	doneRecs int64      // records of the tasks Done in this pass
	done     bitset     // the entries Done in this pass, for Trained
	todo     []todoItem // ordered by seq; items whose task moved on are skipped
	todoHead int
	nextSeq  int64 // the Seq of the next task sent to the end of Todo
	// nextFront is the Seq of the next task sent to the front: negative,
	// decreasing.
	nextFront int64
	timers    deadlineHeap
	avg       movingAverage
	positions []int32 // with a seed, each task's position in its pass's order (order.go)

	holders  holders  // who holds which pending task (holders.go)
	progress progress // the progress the dispatches reported (progress.go)
	pieces   pieces   // the bounds of pieces and split tasks (pieces.go)
	resends  resends  // the finishes the pending dispatches answered (resend.go)
	ranks    ranks    // the ranks' entries and the pass's group (ranks.go)

	passRecords int64      // the records of a pass, once PassRecords computed them
	generation  Generation // the pass state's (checkpoint.go)
}

// The parts of Queues, each applied, filled and started by the one path
// below; called concretely, not through part, so that the calls of every
// entry's read and write inline.
var _ = [...]part{(*holders)(nil), (*progress)(nil), (*pieces)(nil), (*resends)(nil), (*ranks)(nil)}

// applyParts keeps every part in step with a task's new entry e (old: the
// one it replaces). Pieces go first: the records Done count its bounds.
func (q *Queues) applyParts(task int, old, e *Entry) {
	q.pieces.apply(task, old, e)
	q.resends.apply(task, old, e)
	q.holders.apply(task, old, e)
	q.progress.apply(task, old, e)
	q.ranks.apply(task, old, e)
}

// fillParts sets the fields every part owns on a task's entry.
func (q *Queues) fillParts(task int, e *Entry) {
	q.pieces.fill(task, e)
	q.resends.fill(task, e)
	q.holders.fill(task, e)
	q.progress.fill(task, e)
	q.ranks.fill(task, e)
}

// startParts has every part forget the pass that ended.
func (q *Queues) startParts() {
	q.pieces.startPass()
	q.resends.startPass()
	q.holders.startPass()
	q.progress.startPass()
	q.ranks.startPass()
}

type todoItem struct {
	task int
	seq  int64
}

// startPass makes every task untouched in pass p.
func (q *Queues) startPass(p int) {
	q.pass = p
	q.entries = q.entries[:q.tasks] // the pieces of the pass before go
	q.startParts()
	q.counts = [4]int{}
	q.doneRecs = 0
	clear(q.done)
	clear(q.reasons)
	q.timers = q.timers[:0]
	q.todo, q.todoHead = q.todo[:0], 0
	q.nextSeq = int64(len(q.entries))
	q.nextFront = -1
	if p == q.end() {
		return
	}
	q.counts[Todo] = len(q.entries)
	q.todo = q.appendOrder(q.todo, p)
}

// entry returns the effective entry of a task in the current pass.
func (q *Queues) entry(task int) Entry {
	s := q.entries[task]
	if int(s.pass) != q.pass {
		return Entry{Pass: q.pass, Queue: Todo, Seq: q.untouchedSeq(task), Gen: q.generation.Gen}
	}
	e := s.entry(q.reasons[task])
	e.Gen = q.generation.Gen
	q.fillParts(task, &e)
	return e
}

// set replaces a task's entry, keeping the parts, counts, Todo and timers
// in step.
func (q *Queues) set(task int, e Entry) {
	old := q.entry(task)
	q.applyParts(task, &old, &e)
	q.counts[old.Queue]--
	q.counts[e.Queue]++
	if (old.Queue == Done) != (e.Queue == Done) {
		if e.Queue == Done {
			q.doneRecs += q.pieces.length(task)
			q.done.set(task)
		} else {
			q.doneRecs -= q.pieces.length(task)
			q.done.unset(task)
		}
	}
	prev := q.entries[task]
	q.entries[task] = toSlot(e)
	if old.Queue == Pending && e.Queue == Pending && old.Epoch == e.Epoch {
		// The same dispatch, changed (progress, a tighter deadline): it keeps
		// what the queues know of it in memory only.
		q.entries[task].depth, q.entries[task].restored = prev.depth, prev.restored
	}
	if e.Error != "" {
		q.reasons[task] = e.Error
	} else {
		delete(q.reasons, task)
	}
	switch {
	case e.Queue == Todo && (old.Queue != Todo || old.Seq != e.Seq):
		q.enqueue(todoItem{task: task, seq: e.Seq})
	case e.Queue == Pending && !e.Deadline.IsZero() && (old.Queue != Pending || old.Epoch != e.Epoch || !old.Deadline.Equal(e.Deadline)):
		heap.Push(&q.timers, deadlineItem{at: nanos(e.Deadline), task: task, epoch: e.Epoch})
	}
}

// Dispatch hands out the task at the head of Todo to trainer (its name;
// "" or wire.Unnamed for one that sent none), passing over the tasks that
// timed out with it while they wait for another trainer (holders.go). The
// deadline allows for the tasks trainer already holds.
func (q *Queues) Dispatch(now time.Time, trainer string) (task, epoch int, ch Change, err error) {
	task, epoch, ch, _, err = q.DispatchFor(now, trainer, Finished{})
	return task, epoch, ch, err
}

// DispatchFor is Dispatch for a GetTask that carried the finish f (the
// zero Finished: none): the dispatch remembers it (resend.go). When Todo
// has nothing for trainer, the straggler policy may relieve a pending
// dispatch instead (stragglers.go); relief then says what it did, for the
// log, and is nil otherwise.
func (q *Queues) DispatchFor(now time.Time, trainer string, f Finished) (task, epoch int, ch Change, relief *Relief, err error) {
	if q.pass == q.end() {
		return 0, 0, Change{}, nil, ErrAllDone
	}
	if err := q.checkOutside(trainer); err != nil {
		return 0, 0, Change{}, nil, err
	}
	i, ok := q.nextFor(trainer, now)
	if !ok {
		q.compactTodo()
		if task, epoch, ch, relief, ok := q.relieve(now, trainer); ok {
			return task, epoch, ch, relief, nil
		}
		return 0, 0, Change{}, nil, ErrNoTask
	}
	task = q.todo[i].task
	depth := q.depth(trainer)
	e := q.entry(task)
	e.Queue, e.Epoch, e.Trainer, e.For = Pending, e.Epoch+1, trainer, f
	if !tracked(trainer) {
		e.Trainer, e.For = "", Finished{}
	}
	e.Dispatched, e.Deadline = now, now.Add(q.timeoutAt(task, depth))
	ch = q.change(task, e)
	q.entries[task].depth = uint8(depth)
	q.progress.dispatched(task)
	q.compactTodo()
	return task, e.Epoch, ch, nil, nil
}

// enqueue adds an item to Todo: at the end, or at the front for a task
// sent there (a negative Seq, lower than any other).
func (q *Queues) enqueue(it todoItem) {
	switch {
	case it.seq >= 0:
		q.todo = append(q.todo, it)
	case q.todoHead > 0: // reuse a consumed place before the head
		q.todoHead--
		q.todo[q.todoHead] = it
	default:
		q.todo = slices.Insert(q.todo, 0, it)
	}
}

// compactTodo drops the consumed head of Todo once it is most of the slice.
func (q *Queues) compactTodo() {
	if q.todoHead > 1024 && q.todoHead*2 > len(q.todo) {
		q.todo = append(q.todo[:0], q.todo[q.todoHead:]...)
		q.todoHead = 0
	}
}

// Finish records that a dispatch of the task completed, reported by
// trainer (its name; "" when unknown): the trainer now starts the next
// task it holds, whichever dispatch it finished (holders.go).
func (q *Queues) Finish(task, pass, epoch int, trainer string, now time.Time) (wire.Report, Change, error) {
	e, rep, err := q.checkReport(task, pass, epoch)
	if err != nil || rep != 0 {
		return rep, Change{}, err
	}
	if e.Queue == Done {
		q.holders.finishedBy(trainer, now)
		return wire.AlreadyDone, Change{}, nil
	}
	current := e.Queue == Pending && e.Epoch == epoch
	usable := current && !q.entries[task].restored && q.sample(task, q.progress.startedAt(task), now.Sub(q.holders.started(e)))
	holder := e.Trainer
	e.Queue, e.Dispatched, e.Deadline, e.Trainer, e.Progress = Done, time.Time{}, time.Time{}, "", 0
	ch := q.change(task, e)
	if current {
		q.holders.finishedBy(holder, now)
	} else {
		q.holders.finishedBy(trainer, now) // an earlier dispatch's, superseded: its trainer still moves on
	}
	if usable {
		ch.Records = append(ch.Records, q.tightenPending()...)
	}
	return wire.Recorded, ch, nil
}

// Fail records that the current dispatch of the task failed; like a timeout,
// it sends the task back to Todo, or to Failed past MaxTimeouts. The reason
// is kept cut to wire.MaxErrorBytes. Only the dispatch's holder may fail
// it (holds, as for Progress): anyone else is answered Superseded.
func (q *Queues) Fail(task, pass, epoch int, trainer, reason string) (wire.Report, Change, error) {
	e, rep, err := q.checkReport(task, pass, epoch)
	if err != nil || rep != 0 {
		return rep, Change{}, err
	}
	switch {
	case e.Queue == Done:
		return wire.AlreadyDone, Change{}, nil
	case e.Queue != Pending || e.Epoch != epoch || !holds(e, trainer):
		return wire.Superseded, Change{}, nil
	}
	return wire.Recorded, q.change(task, q.retry(e, fmt.Sprintf("dispatch %d failed: %s", epoch, wire.CutReason(reason)))), nil
}

// Expire sends every pending task whose deadline is not after now back to
// Todo (or to Failed past MaxTimeouts). It returns the tasks that timed out
// and what changed.
func (q *Queues) Expire(now time.Time) (expired []int, ch Change) {
	for len(q.timers) > 0 && q.timers[0].at <= now.UnixNano() {
		it := heap.Pop(&q.timers).(deadlineItem)
		e := q.entry(it.task)
		if e.Queue != Pending || e.Epoch != it.epoch {
			continue // finished or failed since
		}
		reason := fmt.Sprintf("dispatch %d timed out after %v", e.Epoch, e.Deadline.Sub(e.Dispatched).Round(time.Millisecond))
		if tracked(e.Trainer) && q.cfg.Reassign > 0 {
			q.holders.keepFrom(it.task, e.Trainer, now.Add(q.cfg.Reassign))
		}
		c := q.change(it.task, q.retry(e, reason))
		ch.Records = append(ch.Records, c.Records...)
		ch.PassChanged = ch.PassChanged || c.PassChanged
		expired = append(expired, it.task)
	}
	ch.Pass, ch.Gen = q.pass, q.generation
	return expired, ch
}

// retry counts a timeout or failure and sends the task to the end of Todo,
// or to Failed once it has used up its retries.
func (q *Queues) retry(e Entry, reason string) Entry {
	e.Timeouts++
	e.Error = reason
	e.Dispatched, e.Deadline, e.Trainer = time.Time{}, time.Time{}, ""
	if e.Timeouts > q.cfg.MaxTimeouts {
		e.Queue = Failed
		return e
	}
	e.Queue, e.Seq = Todo, q.nextSeq
	q.nextSeq++
	return e
}

// checkReport validates a report. A non-zero Report means it is stale and
// changes nothing.
func (q *Queues) checkReport(task, pass, epoch int) (Entry, wire.Report, error) {
	switch {
	case task < 0 || task >= q.tasks+MaxPieces(q.tasks):
		return Entry{}, 0, kindf(ErrBadReport, "task %d does not exist (the dataset has %d tasks, and a pass at most %d pieces)", task, q.tasks, MaxPieces(q.tasks))
	case pass < 0 || epoch < 1:
		return Entry{}, 0, kindf(ErrBadReport, "task %d: pass %d epoch %d (want pass >= 0, epoch >= 1)", task, pass, epoch)
	case pass < q.pass:
		return Entry{}, wire.StalePass, nil // a piece of an older pass too: its pass is over
	case pass > q.pass:
		return Entry{}, 0, kindf(ErrFuturePass, "task %d reported for pass %d, the master is in pass %d", task, pass, q.pass)
	case task >= len(q.entries):
		return Entry{}, 0, kindf(ErrBadReport, "piece %d does not exist (pass %d has %d pieces)", task, q.pass, len(q.entries)-q.tasks)
	}
	e := q.entry(task)
	if epoch > e.Epoch {
		return Entry{}, 0, kindf(ErrFutureEpoch, "task %d epoch %d, it has had %d dispatches in pass %d", task, epoch, e.Epoch, pass)
	}
	return e, 0, nil
}

// change applies a task's new entry and ends the pass if nothing is left in
// Todo or Pending.
func (q *Queues) change(task int, e Entry) Change {
	if e.Queue != Pending {
		e.For = Finished{} // it belongs to a dispatch
	}
	if e.Queue == Todo || e.Queue == Failed {
		e.Rank, e.Group = 0, wire.Group{} // a rank's share holds its dispatches and finishes only
	}
	e.Gen = q.generation.Gen
	q.set(task, e)
	ch := Change{Records: []Record{{Index: task, Entry: e}}, Gen: q.generation}
	if q.counts[Todo] == 0 && q.counts[Pending] == 0 {
		q.startPass(q.pass + 1)
		ch.PassChanged = true
	}
	ch.Pass = q.pass
	return ch
}

// end is the pass that follows the last one: Passes, or for queues
// without end the counter's bound (Config.Endless).
func (q *Queues) end() int {
	if q.cfg.Endless {
		return math.MaxInt32
	}
	return q.cfg.Passes
}

// AddPasses runs n more passes once every pass is done (a dataset's next
// round): the pass after the last one starts, every task untouched. The
// change writes only the pass. Queues without end never are all done.
func (q *Queues) AddPasses(n int) (Change, error) {
	if !q.AllDone() {
		return Change{}, kindf(ErrPassesRunning, "pass %d of %d", q.pass, q.cfg.Passes)
	}
	if n <= 0 || n > math.MaxInt32-q.cfg.Passes {
		return Change{}, errors.Errorf("taskqueue: cannot add %d passes to %d", n, q.cfg.Passes)
	}
	q.cfg.Passes += n
	q.startPass(q.pass)
	return Change{Pass: q.pass, PassChanged: true, Gen: q.generation}, nil
}
