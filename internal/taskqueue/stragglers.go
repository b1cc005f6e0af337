package taskqueue

import (
	"fmt"
	"iter"
	"slices"
	"time"

	"github.com/pkg/errors"
)

// Stragglers. A pass ends when its last task is done, so at its tail a
// slow trainer holds the idle ones up. With Config.Stragglers on, a named
// trainer that asks while Todo is empty is given part of a straggler
// instead of nothing: a pending dispatch that has run StragglerFactor
// times its expected time (the moving average × the records it had left
// when it started; for a task waiting behind others its trainer holds,
// that × 1 + their number, counted from its dispatch). The most overdue
// one goes first. A dispatch is relieved after StragglerMin at the
// earliest. What to do is decided from the state alone, without changing
// it (relief.go: Stragglers.decide); relieve then applies the decision.
//
//   - Split (StragglersSplit, for a started dispatch whose trainer
//     reports progress, once it has reported since it started): the rest of the task is cut at a record boundary; the
//     holder keeps the records before the cut, and those after it become
//     a piece, a new entry dispatched to the asking trainer. The holder
//     learns its new end (Entry.To) in the answer to its next progress
//     report, so the cut is placed past where it will be by then (its
//     rate over its reports so far, 1.5 times its interval between them),
//     and no earlier than where the two would finish together at their
//     rates (the asker's taken as the average's). A dispatch is split
//     again only once it has learned its last cut.
//   - Backup (StragglersBackup; or a dispatch whose trainer reports no
//     progress, or has not for twice its interval between reports: it
//     stalled; or that still waits behind another task of its trainer's):
//     the task is dispatched again to the asker; the first finish wins
//     (any dispatch's finish is accepted), and a holder that reports
//     progress learns at its next report that it is superseded and drops
//     the task. Records may be trained twice; but the clients check a task
//     that waited with the master before they train it (go/client and
//     the Python client: a report that moves nothing), so a waiting task
//     taken back is not.
//
// A piece is an entry like a task's, indexed after the dataset's tasks in
// the order pieces are cut (Entry.Of, From and To say what it covers):
// timeouts, failures, progress, lost trainers, restores and splits apply
// to it alike. Pieces last one pass: the next one starts from whole tasks.
// Bound: MaxPieces splits and backups a pass (after a restore, the count
// starts again from the pieces stored), so a pass has at most twice as
// many entries as the dataset has tasks.

// Stragglers is what Dispatch does for stragglers.
type Stragglers uint8

// The straggler policies.
const (
	StragglersOff    Stragglers = iota // nothing: an idle trainer waits
	StragglersSplit                    // split a dispatch that reports progress, back up one that does not
	StragglersBackup                   // back up, never split
)

var stragglerNames = []string{"off", "split", "backup"}

func (s Stragglers) String() string {
	if int(s) < len(stragglerNames) {
		return stragglerNames[s]
	}
	return fmt.Sprintf("stragglers(%d)", uint8(s))
}

// ParseStragglers returns the policy named off, split or backup.
func ParseStragglers(name string) (Stragglers, error) {
	if i := slices.Index(stragglerNames, name); i >= 0 {
		return Stragglers(i), nil
	}
	return 0, errors.Errorf("taskqueue: unknown straggler policy %q (want off, split or backup)", name)
}

// StragglerFactor is how many times its expected time a dispatch runs
// before an idle trainer relieves it: half the timeout's default factor.
const StragglerFactor = 1.5

// StragglerMin is how long a dispatch runs, at least, before it is
// relieved: time for its trainer to report progress, so that it can be
// split; and the short pieces and tasks of a pass's end, which the
// average expects to take a fraction of a second, are not dispatched
// twice for a trainer's first second on them.
const StragglerMin = 2 * time.Second

// cutMargin multiplies the distance a holder may cover before it learns
// its new end.
const cutMargin = 1.5

// Relief is a decision of the straggler policy (relief.go): split a
// straggler at Cut or back it up. DispatchFor returns it once applied.
type Relief struct {
	Kind    Stragglers // StragglersSplit or StragglersBackup
	Task    int        // the straggling entry (a task or a piece)
	Epoch   int        // its dispatch
	Holder  string     // its trainer ("" for an unnamed one)
	Overdue float64    // the multiple of its expected time it had run
	Reached int        // split: the position it had reported reaching
	Cut     int        // split: where it now ends; the piece starts there
}

// relieve gives trainer part of the most overdue straggler it can, when
// Todo has nothing for it, as the policy decides; it returns what it did.
func (q *Queues) relieve(now time.Time, trainer string) (task, epoch int, ch Change, relief *Relief, ok bool) {
	st := reliefState{asker: trainer, todo: q.counts[Todo], full: q.pieces.full(),
		averaged: q.avg.filled >= q.cfg.MinSamples, mean: q.avg.mean(), pending: q.pendingDispatches()}
	r, ok := q.cfg.Stragglers.decide(now, st)
	if !ok {
		return 0, 0, Change{}, nil, false
	}
	e := q.entry(r.Task)
	if r.Kind == StragglersSplit {
		task, ch = q.split(r.Task, e, r.Cut, now, trainer)
		return task, 1, ch, &r, true
	}
	return r.Task, e.Epoch + 1, q.backUp(r.Task, e, now, trainer), &r, true
}

// pendingDispatches yields the pending dispatches, each once, as the
// straggler policy sees them.
func (q *Queues) pendingDispatches() iter.Seq[pendingDispatch] {
	return func(yield func(pendingDispatch) bool) {
		seen := map[int]bool{}
		for _, it := range q.timers {
			e := q.entry(it.task)
			if e.Queue != Pending || e.Epoch != it.epoch || seen[it.task] {
				continue
			}
			seen[it.task] = true
			d := pendingDispatch{task: it.task, epoch: e.Epoch, holder: e.Trainer, dispatched: e.Dispatched,
				started: q.holders.started(e), depth: int(q.entries[it.task].depth), end: q.pieces.end(it.task),
				mark: q.progress.mark(it.task), interval: q.progress.interval(e.Trainer)}
			if !yield(d) {
				return
			}
		}
	}
}

// split cuts a pending dispatch's task at cut and dispatches the rest to
// trainer as a new piece; it returns the piece and what changed.
func (q *Queues) split(task int, e Entry, cut int, now time.Time, trainer string) (int, Change) {
	end := int(q.pieces.end(task))
	e.To = cut
	ch := q.change(task, e)
	q.progress.cutSince(task)

	piece := len(q.entries)
	q.grow(piece)
	depth := q.depth(trainer)
	p := Entry{Pass: q.pass, Queue: Pending, Epoch: 1, Seq: q.nextSeq, Trainer: trainer, Progress: cut,
		Of: e.Of, From: cut, To: end, Dispatched: now}
	q.nextSeq++
	p.Deadline = now.Add(q.timeoutFor(int64(end-cut)) * time.Duration(1+depth))
	ch = ch.Merge(q.change(piece, p))
	q.entries[piece].depth = uint8(depth)
	q.progress.dispatched(piece)
	q.pieces.relieved++
	return piece, ch
}

// backUp dispatches a pending task again, to trainer.
func (q *Queues) backUp(task int, e Entry, now time.Time, trainer string) Change {
	depth := q.depth(trainer)
	e.Epoch++
	e.Trainer, e.For = trainer, Finished{}
	e.Dispatched, e.Deadline = now, now.Add(q.timeoutAt(task, depth))
	ch := q.change(task, e)
	q.entries[task].depth = uint8(depth)
	q.progress.dispatched(task)
	q.pieces.relieved++
	return ch
}
