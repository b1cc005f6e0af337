package taskqueue

import (
	"fmt"
	"iter"
	"math"
	"time"

	"github.com/pkg/errors"

	"github.com/trainmaster/master/go/wire"
)

// ErrBadEntry is wrapped by CheckRecord's errors.
var ErrBadEntry = errors.New("taskqueue: stored entry not valid")

// kindf returns an error that errors.Is takes for kind, whose text is
// kind's, ": ", then the formatted detail.
func kindf(kind error, format string, args ...any) error {
	return wire.WithKind(kind, errors.Errorf(format, args...))
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
	return RestoreGen(cfg, numTasks, records, pass, Generation{}, stored, now)
}

// RestoreGen is Restore of a pass state of generation gen (checkpoint.go):
// stored entries of other generations are ignored.
func RestoreGen(cfg Config, numTasks int, records func(task int) int64, pass int, gen Generation, stored iter.Seq2[Record, error], now time.Time) (*Queues, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if numTasks <= 0 {
		return nil, errors.Errorf("taskqueue: %d tasks: a dataset needs at least one", numTasks)
	}
	if err := checkOrder(cfg, numTasks); err != nil {
		return nil, err
	}
	if pass < 0 || pass > math.MaxInt32 {
		return nil, errors.Errorf("taskqueue: stored pass %d is negative or too large", pass)
	}
	if gen.Gen < 0 || gen.Pass < 0 || gen.Left < 0 {
		return nil, errors.Errorf("taskqueue: stored generation %+v is negative", gen)
	}
	q := emptyQueues(cfg, numTasks, records)
	q.generation = gen
	q.startPass(min(pass, q.end()))
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

// emptyQueues returns queues with every task untouched, before any pass.
func emptyQueues(cfg Config, numTasks int, records func(task int) int64) *Queues {
	q := &Queues{cfg: cfg, records: records, tasks: numTasks, entries: make([]slot, numTasks), reasons: map[int]string{},
		avg: newMovingAverage(cfg.Window), holders: newHolders(), progress: newProgress(),
		pieces: newPieces(numTasks, records), resends: newResends(), ranks: newRanks(numTasks, records)}
	for i := range q.entries {
		q.entries[i].pass = -1
	}
	return q
}

// restoreRecord puts one stored entry back, if it is of the current pass.
func (q *Queues) restoreRecord(r Record, now time.Time) error {
	if err := CheckRecord(r, q.tasks); err != nil {
		return err
	}
	if r.Pass != q.pass || r.Gen != q.generation.Gen || q.AllDone() {
		return nil
	}
	if r.Index < q.tasks {
		r.Of = r.Index // stores leave it out for a task
	}
	if records := q.records(r.Of); int64(max(r.Progress, r.To)) > records {
		return kindf(ErrBadEntry, "task %d: progress %d or end %d past the %d records of task %d", r.Index, r.Progress, r.To, records, r.Of)
	}
	if g, ok := q.Group(); ok && r.Group.Ranks > 0 && r.Group != g {
		return kindf(ErrBadEntry, "task %d: held by rank %d of a group of %v; other entries of pass %d are a group of %v's", r.Index, r.Rank, r.Group, q.pass, g)
	}
	q.grow(r.Index)
	if r.Queue == Pending && r.Group.Ranks > 0 {
		r.Dispatched = now // a rank's dispatch has no deadline (ranks.go)
	} else if r.Queue == Pending {
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

// CheckRecord tells whether a stored entry is one that the operations of
// this package can have written for a dataset of numTasks tasks: a task
// that exists, a known queue, and counters that are not negative, fit the
// queues' 32-bit slots, and agree (every entry is written by a dispatch or
// after one, so its epoch is at least 1 and at least its timeouts).
func CheckRecord(r Record, numTasks int) error {
	bad := func(format string, args ...any) error {
		return kindf(ErrBadEntry, "task %d: %s", r.Index, fmt.Sprintf(format, args...))
	}
	switch {
	case r.Index < 0 || r.Index >= numTasks+MaxPieces(numTasks):
		return bad("the dataset has %d tasks, and a pass at most %d pieces", numTasks, MaxPieces(numTasks))
	case r.Queue > Failed:
		return bad("unknown queue %d", r.Queue)
	case r.Pass < 0 || r.Pass > math.MaxInt32:
		return bad("pass %d", r.Pass)
	case (r.Epoch < 1 && !undispatched(r)) || r.Epoch > math.MaxInt32:
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
	case r.For != (Finished{}) && (r.Queue != Pending || r.For.Task < 0 || r.For.Epoch < 0 || r.For.Pass < 0 || r.For.Pass > r.Pass ||
		(r.For.Epoch == 0 && (r.For.Task != 0 || r.For.Pass != 0 || r.For.Ask == 0))):
		return bad("answering the finish of task %d epoch %d pass %d in queue %v", r.For.Task, r.For.Epoch, r.For.Pass, r.Queue)
	}
	if err := checkRank(r); err != nil {
		return err
	}
	return checkSpan(r, numTasks)
}

// undispatched reports whether r is an entry no dispatch wrote (its epoch
// 0): a piece a rank's share cut off a task (ranks.go), or an entry a
// rewind made (checkpoint.go), in Todo or Done.
func undispatched(r Record) bool {
	return r.Epoch == 0 && r.Timeouts == 0 && (r.Queue == Todo || r.Queue == Done)
}

// checkRank checks an entry's rank and group, as CheckRecord.
func checkRank(r Record) error {
	switch {
	case r.Group == (wire.Group{}) && r.Rank == 0:
		return nil
	case r.Queue != Pending && r.Queue != Done:
		return kindf(ErrBadEntry, "task %d: rank %d of a group of %v in queue %v (only a pending or done task has one)", r.Index, r.Rank, r.Group, r.Queue)
	}
	if err := r.Group.CheckRank(r.Rank); err != nil {
		return kindf(ErrBadEntry, "task %d: %v", r.Index, err)
	}
	return nil
}

// minSeq is the lowest Seq an entry may have: as many tasks can be sent to
// the front of Todo in a pass as dispatches fit the epochs' int32.
const minSeq = -1 << 62
