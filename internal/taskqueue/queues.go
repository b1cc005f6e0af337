package taskqueue

import (
	"container/heap"
	"errors"
	"fmt"
	"iter"
	"math"
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
	// Of, From and To bound the records an entry covers (stragglers.go):
	// positions From to To-1 of task Of's record order. A task has Of
	// its own index and From 0; To 0 means to its end, and a task split
	// in its pass has the position it was cut at. A piece, an entry past
	// the dataset's tasks, is the rest of a task cut off in its pass.
	Of, From, To int
}

// Record is one task's entry, as a Change carries it.
type Record struct {
	Index int
	Entry
}

// Change is what one operation changed.
type Change struct {
	Pass        int      // the pass after the change; Passes once all are done
	PassChanged bool     // the operation ended a pass
	Records     []Record // new entries of the tasks it touched
	// Relief is set by a Dispatch that relieved a straggler
	// (stragglers.go): what it did, for the log. Stores ignore it.
	Relief *Relief
}

// Empty reports whether the change changed nothing.
func (c Change) Empty() bool { return !c.PassChanged && len(c.Records) == 0 }

// Merge folds a later change into c, so that committing c has the effect of
// committing both in order: a task touched by both keeps its later entry,
// in the place of its first. It returns the merged change.
func (c Change) Merge(later Change) Change {
	c.Pass = later.Pass
	c.PassChanged = c.PassChanged || later.PassChanged
	if later.Relief != nil {
		c.Relief = later.Relief
	}
	for _, r := range later.Records {
		if i := slices.IndexFunc(c.Records, func(old Record) bool { return old.Index == r.Index }); i >= 0 {
			c.Records[i] = r
			continue
		}
		c.Records = append(c.Records, r)
	}
	return c
}

// Errors of the operations. Reports that change nothing are not errors: they
// return a wire.Report saying why.
var (
	ErrNoTask      = errors.New("taskqueue: no task available")
	ErrAllDone     = errors.New("taskqueue: all passes done")
	ErrBadReport   = errors.New("taskqueue: bad report")
	ErrFuturePass  = errors.New("taskqueue: pass has not started")
	ErrFutureEpoch = errors.New("taskqueue: epoch from the future")
)

// Queues holds the state of every task of a dataset.
type Queues struct {
	cfg      Config
	records  func(task int) int64
	tasks    int // the dataset's; entries past them are pieces (stragglers.go)
	pass     int
	entries  []slot
	reasons  map[int]string // Entry.Error of the current pass, where not empty
	counts   [4]int
	doneRecs int64      // records of the tasks Done in this pass
	todo     []todoItem // ordered by seq; items whose task moved on are skipped
	todoHead int
	nextSeq  int64 // the Seq of the next task sent to the end of Todo
	// nextFront is the Seq of the next task sent to the front: negative,
	// decreasing.
	nextFront int64
	timers    deadlineHeap
	avg       movingAverage
	holders   map[int]string      // pending task -> its trainer (holders.go)
	holding   map[string]*holding // trainer -> what it holds
	avoid     map[int]avoidance   // task sent back by a timeout -> the trainer it was taken from
	progress  map[int]progressMark
	positions []int32                  // with a seed, each task's position in its pass's order (order.go)
	spans     map[int]span             // Of, From and To of the entries that have them (stragglers.go)
	relieved  int                      // splits and backups in this pass
	reporters map[string]time.Duration // trainers that report progress -> their interval (progress.go)
	answers   map[int]Finished         // pending task -> the finish its dispatch answered (resend.go)
}

type todoItem struct {
	task int
	seq  int64
}

// New returns the queues of numTasks tasks at the start of pass 0;
// records(i) is the number of records of task i.
func New(cfg Config, numTasks int, records func(task int) int64) (*Queues, error) {
	return Restore(cfg, numTasks, records, 0, nil, time.Time{})
}

// Restore rebuilds queues from a stored pass and the stored entries, taken
// one at a time from stored (nil: none) so that they are never all held at
// once; entries of other passes are ignored. A stored pass beyond
// cfg.Passes (the job was restarted with fewer passes) means every pass is
// done. Every entry of the current pass is checked (CheckRecord) and the
// first bad one, or the first error stored yields, is returned.
//
// Pending tasks keep their stored deadline, but at least Config.TimeoutMin
// from now: their trainers may have been cut off from the master while it
// changed, and deserve the time to report. No more: every restore starts
// that time again, so a longer one (a whole initial timeout, or the
// holders' grace) would hold the last task of a pass, held by a trainer
// that died, for as long as failovers keep coming faster than it. Their dispatch
// time becomes the restore's. The moving average starts empty, so a new
// dispatch's timeout is Config.Timeout until MinSamples dispatches have
// finished; the finishes of restored tasks are not samples of it: their
// dispatch time is the restore's, so the first to finish would be those
// nearly done, and the average would come out short enough to time out
// the others while their trainers still train them.
func Restore(cfg Config, numTasks int, records func(task int) int64, pass int, stored iter.Seq2[Record, error], now time.Time) (*Queues, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if numTasks <= 0 {
		return nil, fmt.Errorf("taskqueue: %d tasks: a dataset needs at least one", numTasks)
	}
	if err := checkOrder(cfg, numTasks); err != nil {
		return nil, err
	}
	if pass < 0 || pass > math.MaxInt32 {
		return nil, fmt.Errorf("taskqueue: stored pass %d is negative or too large", pass)
	}
	pass = min(pass, cfg.Passes)
	q := &Queues{cfg: cfg, records: records, tasks: numTasks, entries: make([]slot, numTasks), reasons: map[int]string{}, avg: newMovingAverage(cfg.Window),
		holders: map[int]string{}, holding: map[string]*holding{}, avoid: map[int]avoidance{}, progress: map[int]progressMark{}, spans: map[int]span{}, reporters: map[string]time.Duration{}, answers: map[int]Finished{}}
	for i := range q.entries {
		q.entries[i].pass = -1
	}
	q.startPass(pass)
	if stored != nil {
		for r, err := range stored {
			if err != nil {
				return nil, err
			}
			if err := q.restoreRecord(r, now); err != nil {
				return nil, err
			}
		}
	}
	if err := q.checkPieces(); err != nil {
		return nil, err
	}
	q.rebuildTodo()
	return q, nil
}

// restoreRecord puts one stored entry back, if it is of the current pass.
func (q *Queues) restoreRecord(r Record, now time.Time) error {
	if err := CheckRecord(r, q.tasks); err != nil {
		return err
	}
	if r.Pass != q.pass || q.AllDone() {
		return nil
	}
	if r.Index < q.tasks {
		r.Of = r.Index // stores leave it out for a task
	}
	if records := q.records(r.Of); int64(max(r.Progress, r.To)) > records {
		return fmt.Errorf("%w: task %d: progress %d or end %d past the %d records of task %d", ErrBadEntry, r.Index, r.Progress, r.To, records, r.Of)
	}
	q.grow(r.Index)
	if r.Queue == Pending {
		r.Dispatched, r.Deadline = now, later(r.Deadline, now.Add(q.cfg.TimeoutMin))
	}
	r.Error = wire.CutReason(r.Error)
	q.set(r.Index, r.Entry)
	q.entries[r.Index].restored = r.Queue == Pending
	q.nextSeq = max(q.nextSeq, r.Seq+1)
	q.nextFront = min(q.nextFront, r.Seq-1)
	return nil
}

// later returns the later of two instants.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// ErrBadEntry is wrapped by CheckRecord's errors.
var ErrBadEntry = errors.New("taskqueue: stored entry not valid")

// CheckRecord tells whether a stored entry is one that the operations of
// this package can have written for a dataset of numTasks tasks: a task
// that exists, a known queue, and counters that are not negative, fit the
// queues' 32-bit slots, and agree (every entry is written by a dispatch or
// after one, so its epoch is at least 1 and at least its timeouts).
func CheckRecord(r Record, numTasks int) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: task %d: %s", ErrBadEntry, r.Index, fmt.Sprintf(format, args...))
	}
	switch {
	case r.Index < 0 || r.Index >= numTasks+MaxPieces(numTasks):
		return bad("the dataset has %d tasks, and a pass at most %d pieces", numTasks, MaxPieces(numTasks))
	case r.Queue > Failed:
		return bad("unknown queue %d", r.Queue)
	case r.Pass < 0 || r.Pass > math.MaxInt32:
		return bad("pass %d", r.Pass)
	case r.Epoch < 1 || r.Epoch > math.MaxInt32:
		return bad("epoch %d (want 1 to %d)", r.Epoch, math.MaxInt32)
	case r.Timeouts < 0 || r.Timeouts > r.Epoch:
		return bad("%d timeouts in %d dispatches", r.Timeouts, r.Epoch)
	case r.Seq < minSeq:
		return bad("todo order %d (want at least %d)", r.Seq, minSeq)
	case len(r.Trainer) > wire.MaxTrainerNameBytes:
		return bad("trainer name of %d bytes (at most %d)", len(r.Trainer), wire.MaxTrainerNameBytes)
	case r.Progress < 0 || r.Progress > math.MaxInt32 || (r.Queue == Done && r.Progress != 0):
		return bad("progress %d in queue %v", r.Progress, r.Queue)
	case r.Queue != Pending && r.Trainer != "":
		return bad("trainer %q named in queue %v (only a pending task has one)", r.Trainer, r.Queue)
	case r.For != (Finished{}) && (r.Queue != Pending || r.For.Task < 0 || r.For.Epoch < 1 || r.For.Pass < 0 || r.For.Pass > r.Pass):
		return bad("answering the finish of task %d epoch %d pass %d in queue %v", r.For.Task, r.For.Epoch, r.For.Pass, r.Queue)
	}
	return checkSpan(r, numTasks)
}

// minSeq is the lowest Seq an entry may have: as many tasks can be sent to
// the front of Todo in a pass as dispatches fit the epochs' int32.
const minSeq = -1 << 62

// startPass makes every task untouched in pass p.
func (q *Queues) startPass(p int) {
	q.pass = p
	q.entries = q.entries[:q.tasks] // the pieces of the pass before go
	clear(q.spans)
	q.relieved = 0
	q.counts = [4]int{}
	q.doneRecs = 0
	clear(q.reasons)
	clear(q.progress)
	q.timers = q.timers[:0]
	q.todo, q.todoHead = q.todo[:0], 0
	q.nextSeq = int64(len(q.entries))
	q.nextFront = -1
	clear(q.avoid)
	if p == q.cfg.Passes {
		return
	}
	q.counts[Todo] = len(q.entries)
	q.todo = q.appendOrder(q.todo, p)
}

// rebuildTodo orders Todo by seq after a restore.
func (q *Queues) rebuildTodo() {
	q.todo, q.todoHead = q.todo[:0], 0
	for i := range q.entries {
		if e := q.entry(i); e.Queue == Todo {
			q.todo = append(q.todo, todoItem{task: i, seq: e.Seq})
		}
	}
	sortTodo(q.todo)
}

// entry returns the effective entry of a task in the current pass.
func (q *Queues) entry(task int) Entry {
	s := q.entries[task]
	if int(s.pass) != q.pass {
		return Entry{Pass: q.pass, Queue: Todo, Seq: q.untouchedSeq(task)}
	}
	e := s.entry(q.reasons[task])
	if e.Queue == Pending {
		e.Trainer, e.For = q.holders[task], q.answers[task]
	}
	e.Progress = q.progress[task].done
	sp, ok := q.spans[task]
	if !ok {
		sp.of = task
	}
	e.Of, e.From, e.To = int(sp.of), int(sp.from), int(sp.to)
	return e
}

// set replaces a task's entry, keeping counts, Todo and timers in step.
func (q *Queues) set(task int, e Entry) {
	old := q.entry(task)
	q.counts[old.Queue]--
	q.counts[e.Queue]++
	q.setSpan(task, e)
	if e.Queue == Pending && e.For != (Finished{}) {
		q.answers[task] = e.For
	} else {
		delete(q.answers, task)
	}
	if (old.Queue == Done) != (e.Queue == Done) {
		if e.Queue == Done {
			q.doneRecs += q.length(task)
		} else {
			q.doneRecs -= q.length(task)
		}
	}
	prev := q.entries[task]
	q.entries[task] = toSlot(e)
	if old.Queue == Pending && e.Queue == Pending && old.Epoch == e.Epoch {
		// The same dispatch, changed (progress, a tighter deadline): it keeps
		// what the queues know of it in memory only.
		q.entries[task].depth, q.entries[task].restored = prev.depth, prev.restored
	}
	if old.Queue == Pending {
		q.unhold(task)
	}
	if e.Queue == Pending {
		q.hold(task, e.Trainer)
	}
	q.setProgress(task, e)
	if e.Error != "" {
		q.reasons[task] = e.Error
	} else {
		delete(q.reasons, task)
	}
	switch {
	case e.Queue == Todo && (old.Queue != Todo || old.Seq != e.Seq):
		q.enqueue(todoItem{task: task, seq: e.Seq})
	case e.Queue == Pending && (old.Queue != Pending || old.Epoch != e.Epoch || !old.Deadline.Equal(e.Deadline)):
		heap.Push(&q.timers, deadlineItem{at: nanos(e.Deadline), task: task, epoch: e.Epoch})
	}
}

// Dispatch hands out the task at the head of Todo to trainer (its name;
// "" or wire.Unnamed for one that sent none), passing over the tasks that
// timed out with it while they wait for another trainer (holders.go). The
// deadline allows for the tasks trainer already holds.
func (q *Queues) Dispatch(now time.Time, trainer string) (task, epoch int, ch Change, err error) {
	return q.DispatchFor(now, trainer, Finished{})
}

// DispatchFor is Dispatch for a GetTask that carried the finish f (the
// zero Finished: none): the dispatch remembers it (resend.go).
func (q *Queues) DispatchFor(now time.Time, trainer string, f Finished) (task, epoch int, ch Change, err error) {
	if q.pass == q.cfg.Passes {
		return 0, 0, Change{}, ErrAllDone
	}
	i, ok := q.nextFor(trainer, now)
	if !ok {
		q.compactTodo()
		if task, epoch, ch, ok := q.relieve(now, trainer); ok {
			return task, epoch, ch, nil
		}
		return 0, 0, Change{}, ErrNoTask
	}
	task = q.todo[i].task
	depth := q.depth(trainer)
	e := q.entry(task)
	e.Queue, e.Epoch, e.Trainer, e.For = Pending, e.Epoch+1, trainer, f
	if !tracked(trainer) {
		e.Trainer, e.For = "", Finished{}
	}
	e.Dispatched, e.Deadline = now, now.Add(q.timeoutAt(task, depth))
	delete(q.avoid, task)
	ch = q.change(task, e)
	q.entries[task].depth = uint8(depth)
	q.dispatched(task)
	q.compactTodo()
	return task, e.Epoch, ch, nil
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
		q.finishedBy(trainer, now)
		return wire.AlreadyDone, Change{}, nil
	}
	current := e.Queue == Pending && e.Epoch == epoch
	usable := current && !q.entries[task].restored && q.sample(task, q.startedAt(task), now.Sub(q.started(e)))
	holder := e.Trainer
	e.Queue, e.Dispatched, e.Deadline, e.Trainer, e.Progress = Done, time.Time{}, time.Time{}, "", 0
	ch := q.change(task, e)
	if current {
		q.finishedBy(holder, now)
	} else {
		q.finishedBy(trainer, now) // an earlier dispatch's, superseded: its trainer still moves on
	}
	if usable {
		ch.Records = append(ch.Records, q.tightenPending()...)
	}
	return wire.Recorded, ch, nil
}

// Fail records that the current dispatch of the task failed; like a timeout,
// it sends the task back to Todo, or to Failed past MaxTimeouts. The reason
// is kept cut to wire.MaxErrorBytes.
func (q *Queues) Fail(task, pass, epoch int, reason string) (wire.Report, Change, error) {
	e, rep, err := q.checkReport(task, pass, epoch)
	if err != nil || rep != 0 {
		return rep, Change{}, err
	}
	switch {
	case e.Queue == Done:
		return wire.AlreadyDone, Change{}, nil
	case e.Queue != Pending || e.Epoch != epoch:
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
			q.avoid[it.task] = avoidance{trainer: e.Trainer, until: now.Add(q.cfg.Reassign)}
		}
		c := q.change(it.task, q.retry(e, reason))
		ch.Records = append(ch.Records, c.Records...)
		ch.PassChanged = ch.PassChanged || c.PassChanged
		expired = append(expired, it.task)
	}
	ch.Pass = q.pass
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
		return Entry{}, 0, fmt.Errorf("%w: task %d does not exist (the dataset has %d tasks, and a pass at most %d pieces)", ErrBadReport, task, q.tasks, MaxPieces(q.tasks))
	case pass < 0 || epoch < 1:
		return Entry{}, 0, fmt.Errorf("%w: task %d: pass %d epoch %d (want pass >= 0, epoch >= 1)", ErrBadReport, task, pass, epoch)
	case pass < q.pass:
		return Entry{}, wire.StalePass, nil // a piece of an older pass too: its pass is over
	case pass > q.pass:
		return Entry{}, 0, fmt.Errorf("%w: task %d reported for pass %d, the master is in pass %d", ErrFuturePass, task, pass, q.pass)
	case task >= len(q.entries):
		return Entry{}, 0, fmt.Errorf("%w: piece %d does not exist (pass %d has %d pieces)", ErrBadReport, task, q.pass, len(q.entries)-q.tasks)
	}
	e := q.entry(task)
	if epoch > e.Epoch {
		return Entry{}, 0, fmt.Errorf("%w: task %d epoch %d, it has had %d dispatches in pass %d", ErrFutureEpoch, task, epoch, e.Epoch, pass)
	}
	return e, 0, nil
}

// change applies a task's new entry and ends the pass if nothing is left in
// Todo or Pending.
func (q *Queues) change(task int, e Entry) Change {
	if e.Queue != Pending {
		e.For = Finished{} // it belongs to a dispatch
	}
	q.set(task, e)
	ch := Change{Records: []Record{{Index: task, Entry: e}}}
	if q.counts[Todo] == 0 && q.counts[Pending] == 0 {
		q.startPass(q.pass + 1)
		ch.PassChanged = true
	}
	ch.Pass = q.pass
	return ch
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

// ErrPassesRunning is AddPasses's error while a pass runs.
var ErrPassesRunning = errors.New("taskqueue: passes still running")

// AddPasses runs n more passes once every pass is done (a dataset's next
// round): the pass after the last one starts, every task untouched. The
// change writes only the pass.
func (q *Queues) AddPasses(n int) (Change, error) {
	if !q.AllDone() {
		return Change{}, fmt.Errorf("%w: pass %d of %d", ErrPassesRunning, q.pass, q.cfg.Passes)
	}
	if n <= 0 || n > math.MaxInt32-q.cfg.Passes {
		return Change{}, fmt.Errorf("taskqueue: cannot add %d passes to %d", n, q.cfg.Passes)
	}
	q.cfg.Passes += n
	q.startPass(q.pass)
	return Change{Pass: q.pass, PassChanged: true}, nil
}
