package taskqueue

import (
	"fmt"
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
}

// dispatched notes that a task was handed out from its progress.
func (q *Queues) dispatched(task int) {
	if pm, ok := q.progress[task]; ok {
		pm.from, pm.at, pm.prev = pm.done, 0, 0
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
func (q *Queues) Progress(task, pass, epoch, done int, now time.Time) (wire.Report, Change, error) {
	e, rep, err := q.checkReport(task, pass, epoch)
	if err != nil || rep != 0 {
		return rep, Change{}, err
	}
	if records := q.records(task); done < 0 || int64(done) > records {
		return 0, Change{}, fmt.Errorf("%w: task %d: progress %d (the task has %d records)", ErrBadReport, task, done, records)
	}
	switch {
	case e.Queue == Done:
		return wire.AlreadyDone, Change{}, nil
	case e.Queue != Pending || e.Epoch != epoch:
		return wire.Superseded, Change{}, nil
	}
	last := q.progress[task]
	if last.prev != 0 && now.Sub(fromNanos(last.prev)) < wire.MinProgressInterval {
		return wire.TooSoon, Change{}, nil
	}
	if done <= e.Progress {
		return wire.Recorded, Change{}, nil
	}
	e.Progress = done
	ch := q.change(task, e)
	q.progress[task] = progressMark{done: done, from: last.from, at: nanos(now), prev: last.at}
	return wire.Recorded, ch, nil
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
