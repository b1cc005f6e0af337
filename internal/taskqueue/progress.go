package taskqueue

import (
	"math"
	"time"

	"github.com/trainmaster/master/go/wire"
)

// progressMark is a task's progress in the current pass (Entry.Progress)
// and when the master recorded it.
type progressMark struct {
	done     int
	from     int   // the position the current dispatch started at
	at, prev int64 // Unix nanoseconds of the last two reports recorded; 0: none since the dispatch or restore
	// cut: the task was split since the current dispatch's last report,
	// which has not learned its new end yet (stragglers.go).
	cut bool
}

// progress owns Entry.Progress: the marks of the entries trained in part
// by a dispatch that reported it (few, so in a map beside the slots), and
// the interval at which each trainer reports. Invariant: marks has
// exactly the entries of the pass that are not Done and have a Progress,
// and a mark's done is that Progress. Reporters outlive passes.
type progress struct {
	marks     map[int]progressMark
	reporters map[string]time.Duration // trainers that report progress -> their interval
}

func newProgress() progress {
	return progress{marks: map[int]progressMark{}, reporters: map[string]time.Duration{}}
}

// apply keeps a task's mark in step with its new entry; a new position
// comes without report times, which are the caller's to set (recorded).
func (p *progress) apply(task int, _, e *Entry) {
	switch {
	case e.Progress == 0 || e.Queue == Done:
		delete(p.marks, task)
	case p.marks[task].done != e.Progress:
		p.marks[task] = progressMark{done: e.Progress}
	}
}

// fill sets an entry's progress.
func (p *progress) fill(task int, e *Entry) { e.Progress = p.marks[task].done }

// startPass forgets every mark.
func (p *progress) startPass() { clear(p.marks) }

// dispatched notes that a task was handed out from its progress.
func (p *progress) dispatched(task int) {
	if pm, ok := p.marks[task]; ok {
		pm.from, pm.at, pm.prev, pm.cut = pm.done, 0, 0, false
		p.marks[task] = pm
	}
}

// mark returns a task's mark; the zero mark if it has none.
func (p *progress) mark(task int) progressMark { return p.marks[task] }

// startedAt is the position the current dispatch of a task started at.
func (p *progress) startedAt(task int) int { return p.marks[task].from }

// recorded notes that the current dispatch of a task reported reaching
// done at now, after the mark last; apply has already set done.
func (p *progress) recorded(task, done int, now time.Time, last progressMark) {
	p.marks[task] = progressMark{done: done, from: last.from, at: nanos(now), prev: last.at}
}

// cutSince notes that a task was split after its dispatch's last report.
func (p *progress) cutSince(task int) {
	pm := p.marks[task]
	pm.cut = true
	p.marks[task] = pm
}

// learned notes that the dispatch of a task learns its end, in the answer
// to its report.
func (p *progress) learned(task int) {
	if pm, ok := p.marks[task]; ok && pm.cut {
		pm.cut = false
		p.marks[task] = pm
	}
}

// reported notes that trainer reports progress, gap after its last report
// of the same dispatch (0: its first): stragglers.go waits for its report
// rather than back its task up, unless it is silent for twice its
// interval. Until a gap is known, its interval is taken to be
// wire.DefaultProgressInterval. Only holders (h) are remembered: the
// others are forgotten once twice as many names as holders are kept.
func (p *progress) reported(trainer string, gap time.Duration, h *holders) {
	if !tracked(trainer) {
		return
	}
	switch {
	case gap >= wire.MinProgressInterval:
		p.reporters[trainer] = gap
	case p.reporters[trainer] == 0:
		p.reporters[trainer] = wire.DefaultProgressInterval
	}
	if len(p.reporters) > 2*len(h.byTrainer)+64 {
		for name := range p.reporters {
			if h.held(name) == 0 {
				delete(p.reporters, name)
			}
		}
	}
}

// interval returns how often trainer reports progress; 0: it does not.
func (p *progress) interval(trainer string) time.Duration { return p.reporters[trainer] }

// Progress records that the current dispatch of a task has trained the
// records of the task's order before position done (wire.Progress),
// reported by trainer (its name; "" or wire.Unnamed for one that sent
// none). Only the dispatch's holder moves its position (holders.go:
// holds): a report from another dispatch, or from any other trainer, is
// Superseded, and no sign that the holder is alive. One for a task Done is
// AlreadyDone, one within wire.MinProgressInterval of the last recorded
// for the dispatch is TooSoon, and one that does not move forward changes
// nothing; none of them is an error. Two reports may come close together
// (the last one of a trainer that stops just after a periodic one), no
// more: a report is TooSoon unless the one before the last recorded is
// wire.MinProgressInterval old, so a dispatch costs at most two writes in
// any such interval. A position past the task's records is an error.
//
// Every answer to the current dispatch carries where it is to stop, To,
// which a split moves forward (stragglers.go): a position past To is
// recorded as To, since the records past it are a piece's.
func (q *Queues) Progress(task, pass, epoch, done int, trainer string, now time.Time) (wire.ProgressReply, Change, error) {
	e, rep, err := q.checkReport(task, pass, epoch)
	if err != nil || rep != 0 {
		return wire.ProgressReply{Report: rep}, Change{}, err
	}
	if records := q.records(e.Of); done < 0 || int64(done) > records || done > math.MaxInt32 {
		return wire.ProgressReply{}, Change{}, kindf(ErrBadReport, "task %d: progress %d (task %d has %d records)", task, done, e.Of, records)
	}
	switch {
	case e.Queue == Done:
		return wire.ProgressReply{Report: wire.AlreadyDone}, Change{}, nil
	case e.Queue != Pending || e.Epoch != epoch || !holds(e, trainer):
		return wire.ProgressReply{Report: wire.Superseded}, Change{}, nil
	}
	reply := wire.ProgressReply{Report: wire.Recorded, To: e.To}
	last := q.progress.mark(task)
	var gap time.Duration // since the dispatch's last report recorded
	if last.at != 0 {
		gap = now.Sub(fromNanos(last.at))
	}
	q.progress.reported(e.Trainer, gap, &q.holders)
	q.progress.learned(task)
	if last.prev != 0 && now.Sub(fromNanos(last.prev)) < wire.MinProgressInterval {
		reply.Report = wire.TooSoon
		return reply, Change{}, nil
	}
	done = min(done, int(q.pieces.end(task)))
	if done <= e.Progress {
		return reply, Change{}, nil
	}
	e.Progress = done
	ch := q.change(task, e)
	q.progress.recorded(task, done, now, last)
	return reply, ch, nil
}
