package taskqueue

import (
	"fmt"
	"math"
	"time"

	"github.com/trainmaster/master/go/wire"
)

// progressMark is a task's progress in the current pass (Entry.Progress)
// and when the master recorded it. Few tasks have one, those trained in
// part by a dispatch that reported it, so they are kept in a map beside
// the slots, like failure reasons.
type progressMark struct {
	done     int
	from     int   // the position the current dispatch started at
	at, prev int64 // Unix nanoseconds of the last two reports recorded; 0: none since the dispatch or restore
	// cut: the task was split since the current dispatch's last report,
	// which has not learned its new end yet (stragglers.go).
	cut bool
}

// dispatched notes that a task was handed out from its progress.
func (q *Queues) dispatched(task int) {
	if pm, ok := q.progress[task]; ok {
		pm.from, pm.at, pm.prev, pm.cut = pm.done, 0, 0, false
		q.progress[task] = pm
	}
}

// startedAt is the position the current dispatch of a task started at.
func (q *Queues) startedAt(task int) int { return q.progress[task].from }

// Progress records that the current dispatch of a task has trained the
// records of the task's order before position done (wire.Progress). A
// report from another dispatch is Superseded, one for a task Done is
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
func (q *Queues) Progress(task, pass, epoch, done int, now time.Time) (wire.ProgressReply, Change, error) {
	e, rep, err := q.checkReport(task, pass, epoch)
	if err != nil || rep != 0 {
		return wire.ProgressReply{Report: rep}, Change{}, err
	}
	if records := q.records(e.Of); done < 0 || int64(done) > records || done > math.MaxInt32 {
		return wire.ProgressReply{}, Change{}, fmt.Errorf("%w: task %d: progress %d (task %d has %d records)", ErrBadReport, task, done, e.Of, records)
	}
	switch {
	case e.Queue == Done:
		return wire.ProgressReply{Report: wire.AlreadyDone}, Change{}, nil
	case e.Queue != Pending || e.Epoch != epoch:
		return wire.ProgressReply{Report: wire.Superseded}, Change{}, nil
	}
	reply := wire.ProgressReply{Report: wire.Recorded, To: e.To}
	last := q.progress[task]
	var gap time.Duration // since the dispatch's last report recorded
	if last.at != 0 {
		gap = now.Sub(fromNanos(last.at))
	}
	q.reported(e.Trainer, gap)
	if last.cut {
		last.cut = false // the dispatch learns its end in this answer
		q.progress[task] = last
	}
	if last.prev != 0 && now.Sub(fromNanos(last.prev)) < wire.MinProgressInterval {
		reply.Report = wire.TooSoon
		return reply, Change{}, nil
	}
	done = min(done, int(q.end(task)))
	if done <= e.Progress {
		return reply, Change{}, nil
	}
	e.Progress = done
	ch := q.change(task, e)
	q.progress[task] = progressMark{done: done, from: last.from, at: nanos(now), prev: last.at}
	return reply, ch, nil
}

// reported notes that trainer reports progress, gap after its last report
// of the same dispatch (0: its first): stragglers.go waits for its report
// rather than back its task up, unless it is silent for twice its
// interval. Until a gap is known, its interval is taken to be
// wire.DefaultProgressInterval. Only holders are remembered: the others
// are forgotten once twice as many names as holders are kept.
func (q *Queues) reported(trainer string, gap time.Duration) {
	if !tracked(trainer) {
		return
	}
	switch {
	case gap >= wire.MinProgressInterval:
		q.reporters[trainer] = gap
	case q.reporters[trainer] == 0:
		q.reporters[trainer] = wire.DefaultProgressInterval
	}
	if len(q.reporters) > 2*len(q.holding)+64 {
		for name := range q.reporters {
			if _, ok := q.holding[name]; !ok {
				delete(q.reporters, name)
			}
		}
	}
}

// silent says whether a dispatch of trainer last heard of at last (its
// last report, or its start) is silent at now: its trainer does not report
// progress, or has not for twice its interval (and a second): it stalled.
func (q *Queues) silent(trainer string, last, now time.Time) bool {
	interval := q.reporters[trainer]
	return interval == 0 || now.Sub(last) > 2*interval+wire.MinProgressInterval
}

// setProgress keeps a task's progress in step with its new entry.
func (q *Queues) setProgress(task int, e Entry) {
	switch {
	case e.Progress == 0 || e.Queue == Done:
		delete(q.progress, task)
	case q.progress[task].done != e.Progress:
		q.progress[task] = progressMark{done: e.Progress} // its reports' times are the caller's to set
	}
}
