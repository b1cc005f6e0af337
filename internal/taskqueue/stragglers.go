package taskqueue

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/trainmaster/master/go/wire"
)

// Stragglers. A pass ends when its last task is done, so at its tail a
// slow trainer holds the idle ones up. With Config.Stragglers on, a named
// trainer that asks while Todo is empty is given part of a straggler
// instead of nothing: a pending dispatch that has run StragglerFactor
// times its expected time (the moving average × the records it had left
// when it started; for a task waiting behind others its trainer holds,
// that × 1 + their number, counted from its dispatch). The most overdue
// one goes first. A dispatch is relieved after StragglerMin at the
// earliest.
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
	return 0, fmt.Errorf("taskqueue: unknown straggler policy %q (want off, split or backup)", name)
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

// MaxPieces returns how many splits and backups a pass of a dataset of
// numTasks tasks may have.
func MaxPieces(numTasks int) int { return numTasks }

// Relief describes a straggler that Dispatch relieved.
type Relief struct {
	Kind    Stragglers // StragglersSplit or StragglersBackup
	Task    int        // the straggling entry (a task or a piece)
	Epoch   int        // its dispatch
	Holder  string     // its trainer ("" for an unnamed one)
	Overdue float64    // the multiple of its expected time it had run
	Reached int        // split: the position it had reported reaching
	Cut     int        // split: where it now ends; the piece starts there
}

// span is an entry's Of, From and To, kept for the pieces and the tasks
// split in the current pass: few, so in a map beside the slots.
type span struct{ of, from, to int }

// checkSpan checks an entry's bounds, as CheckRecord.
func checkSpan(r Record, numTasks int) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: task %d: %s", ErrBadEntry, r.Index, fmt.Sprintf(format, args...))
	}
	progressOK := r.Queue == Done || r.Progress <= r.To || r.To == 0
	if r.Index < numTasks {
		switch {
		case (r.Of != 0 && r.Of != r.Index) || r.From != 0:
			return bad("a task of the dataset with the bounds of a piece (of %d, from %d)", r.Of, r.From)
		case r.To < 0 || r.To > math.MaxInt32 || !progressOK:
			return bad("end %d with progress %d", r.To, r.Progress)
		}
		return nil
	}
	switch {
	case r.Of < 0 || r.Of >= numTasks:
		return bad("a piece of task %d (the dataset has %d tasks)", r.Of, numTasks)
	case r.From < 1 || r.To <= r.From || r.To > math.MaxInt32:
		return bad("a piece from %d to %d (want 0 < from < to)", r.From, r.To)
	case r.Queue != Done && (r.Progress < r.From || !progressOK):
		return bad("progress %d outside the piece's %d to %d", r.Progress, r.From, r.To)
	}
	return nil
}

// setSpan keeps a task's bounds in step with its new entry.
func (q *Queues) setSpan(task int, e Entry) {
	if task < q.tasks && e.To == 0 {
		delete(q.spans, task)
		return
	}
	q.spans[task] = span{of: e.Of, from: e.From, to: e.To}
}

// end returns the position past the last record an entry covers.
func (q *Queues) end(task int) int64 {
	if sp, ok := q.spans[task]; ok && sp.to > 0 {
		return int64(sp.to)
	}
	return q.records(task)
}

// length returns the number of records an entry covers.
func (q *Queues) length(task int) int64 { return q.end(task) - int64(q.spans[task].from) }

// grow makes room for the entries up to index, as untouched in Todo until
// set: a piece being cut, or restored.
func (q *Queues) grow(index int) {
	for len(q.entries) <= index {
		q.entries = append(q.entries, slot{pass: -1})
		q.counts[Todo]++
	}
}

// checkPieces refuses restored pieces with a gap among them: pieces are
// cut and committed in order.
func (q *Queues) checkPieces() error {
	for i := q.tasks; i < len(q.entries); i++ {
		if int(q.entries[i].pass) != q.pass {
			return fmt.Errorf("%w: piece %d of pass %d is missing, and piece %d is stored", ErrBadEntry, i, q.pass, len(q.entries)-1)
		}
	}
	q.relieved = len(q.entries) - q.tasks
	return nil
}

// straggler is a pending dispatch that has run past StragglerFactor times
// its expected time.
type straggler struct {
	task    int
	overdue float64
	waiting bool // not started: it waits behind another task its trainer holds
}

// relieve gives trainer part of the most overdue straggler it can, when
// Todo is empty (Dispatch found nothing for it).
func (q *Queues) relieve(now time.Time, trainer string) (task, epoch int, ch Change, ok bool) {
	if q.cfg.Stragglers == StragglersOff || !tracked(trainer) || q.counts[Todo] > 0 ||
		q.relieved >= MaxPieces(q.tasks) || q.avg.filled < q.cfg.MinSamples {
		return 0, 0, Change{}, false
	}
	for _, s := range q.stragglers(now, trainer) {
		e := q.entry(s.task)
		r := Relief{Kind: StragglersBackup, Task: s.task, Epoch: e.Epoch, Holder: e.Trainer, Overdue: s.overdue}
		pm := q.progress[s.task]
		heard := q.started(e)
		if pm.at != 0 {
			heard = fromNanos(pm.at)
		}
		if q.cfg.Stragglers == StragglersSplit && !s.waiting && !q.silent(e.Trainer, heard, now) {
			if pm.at == 0 || pm.cut {
				continue // it will report (its first since it started, or the one that learns its cut), and be split then
			}
			cut, ok := q.cutAt(s.task, e, now)
			if !ok {
				continue // it will be done before a piece would
			}
			r.Kind, r.Reached, r.Cut = StragglersSplit, pm.done, cut
			task, ch = q.split(s.task, e, cut, now, trainer)
			ch.Relief = &r
			return task, 1, ch, true
		}
		ch = q.backUp(s.task, e, now, trainer)
		ch.Relief = &r
		return s.task, e.Epoch + 1, ch, true
	}
	return 0, 0, Change{}, false
}

// stragglers returns the pending dispatches not held by trainer that have
// run past StragglerFactor times their expected time, most overdue first.
func (q *Queues) stragglers(now time.Time, trainer string) []straggler {
	var out []straggler
	seen := map[int]bool{}
	mean := q.avg.mean()
	for _, it := range q.timers {
		e := q.entry(it.task)
		if e.Queue != Pending || e.Epoch != it.epoch || e.Trainer == trainer || seen[it.task] {
			continue
		}
		seen[it.task] = true
		expected := mean * float64(max(q.end(it.task)-int64(q.startedAt(it.task)), 1))
		started := q.started(e)
		depth := q.entries[it.task].depth
		waiting := depth > 0 && !started.After(e.Dispatched)
		if waiting {
			expected *= float64(1 + depth) // it waits behind the tasks its trainer held
		}
		if overdue := now.Sub(started).Seconds() / expected; overdue > StragglerFactor && now.Sub(started) >= StragglerMin {
			out = append(out, straggler{task: it.task, overdue: overdue, waiting: waiting})
		}
	}
	slices.SortFunc(out, func(a, b straggler) int {
		return cmp.Or(cmp.Compare(b.overdue, a.overdue), cmp.Compare(a.task, b.task))
	})
	return out
}

// cutAt returns where to cut the rest of a dispatch that reported
// progress, or false when the piece would be empty: the holder will be
// done before the piece would.
func (q *Queues) cutAt(task int, e Entry, now time.Time) (int, bool) {
	pm := q.progress[task]
	end := q.end(task)
	if end > math.MaxInt32 {
		return 0, false // past what an entry stores
	}
	at, started := fromNanos(pm.at), q.started(e)
	rate := 0.0 // the holder's records per second
	if took := at.Sub(started).Seconds(); took > 0 && pm.done > pm.from {
		rate = float64(pm.done-pm.from) / took
	}
	gap := at.Sub(started)
	if pm.prev != 0 {
		gap = at.Sub(fromNanos(pm.prev))
	}
	gap = max(gap, wire.MinProgressInterval)
	next := at.Add(gap) // when the holder reports next, and learns its end
	if next.Before(now) {
		next = now.Add(gap)
	}
	reach := float64(pm.done) + rate*next.Sub(at).Seconds()*cutMargin + 1
	here := float64(pm.done) + rate*now.Sub(at).Seconds()
	fast := 1 / max(q.avg.mean(), 1e-9)
	together := here + (float64(end)-here)*rate/(rate+fast)
	cut := math.Ceil(max(reach, together))
	if cut >= float64(end) {
		return 0, false
	}
	return int(cut), true
}

// split cuts a pending dispatch's task at cut and dispatches the rest to
// trainer as a new piece; it returns the piece and what changed.
func (q *Queues) split(task int, e Entry, cut int, now time.Time, trainer string) (int, Change) {
	end := int(q.end(task))
	e.To = cut
	ch := q.change(task, e)
	pm := q.progress[task]
	pm.cut = true
	q.progress[task] = pm

	piece := len(q.entries)
	q.grow(piece)
	depth := q.depth(trainer)
	p := Entry{Pass: q.pass, Queue: Pending, Epoch: 1, Seq: q.nextSeq, Trainer: trainer, Progress: cut,
		Of: e.Of, From: cut, To: end, Dispatched: now}
	q.nextSeq++
	p.Deadline = now.Add(q.timeoutFor(int64(end-cut)) * time.Duration(1+depth))
	ch = ch.Merge(q.change(piece, p))
	q.entries[piece].depth = uint8(depth)
	q.dispatched(piece)
	q.relieved++
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
	q.dispatched(task)
	q.relieved++
	return ch
}
