package taskqueue

import (
	"container/heap"
	"slices"
	"time"

	"github.com/trainmaster/master/go/wire"
)

// movingAverage is the mean of the last len(samples) values of seconds per
// record.
type movingAverage struct {
	samples []float64
	next    int
	filled  int
	sum     float64
}

func newMovingAverage(window int) movingAverage {
	return movingAverage{samples: make([]float64, window)}
}

func (m *movingAverage) add(v float64) {
	if m.filled == len(m.samples) {
		m.sum -= m.samples[m.next]
	} else {
		m.filled++
	}
	m.samples[m.next] = v
	m.sum += v
	m.next = (m.next + 1) % len(m.samples)
}

func (m *movingAverage) mean() float64 { return m.sum / float64(m.filled) }

// timeoutFor returns the timeout of a dispatch of a task of records records.
func (q *Queues) timeoutFor(records int64) time.Duration {
	if q.avg.filled < q.cfg.MinSamples {
		return q.cfg.Timeout
	}
	return clampSeconds(q.cfg.Factor*q.avg.mean()*float64(max(records, 1)), q.cfg.TimeoutMin, q.cfg.Timeout)
}

// clampSeconds returns secs seconds as a duration within [lo, hi] (hi when
// lo is over it); hi also guards the conversion against overflow.
func clampSeconds(secs float64, lo, hi time.Duration) time.Duration {
	if secs >= hi.Seconds() {
		return hi
	}
	return min(max(time.Duration(secs*float64(time.Second)), lo), hi)
}

// timeoutAt returns the timeout of a dispatch of task whose trainer held
// depth other tasks when it asked: it waits behind them (holders.go).
func (q *Queues) timeoutAt(task, depth int) time.Duration {
	return q.timeoutFor(q.pieces.length(task)) * time.Duration(1+depth)
}

// sample records how long a finished dispatch took, from position from of
// its task, and reports whether it is the sample that makes the average
// usable: then the dispatches still running with the initial timeout are
// to get the adaptive one too (tightenPending), so that a task stalled in
// the first wave does not hold its pass for the whole initial timeout.
func (q *Queues) sample(task, from int, took time.Duration) bool {
	if took < 0 {
		took = 0
	}
	// A dispatch that started at from (wire.Progress) trained the rest.
	q.avg.add(took.Seconds() / float64(max(q.pieces.end(task)-int64(from), 1)))
	return q.avg.filled == q.cfg.MinSamples
}

// tightenPending gives the pending dispatches the adaptive timeout, counted
// from their dispatch and allowing for their depth, where it is shorter
// than theirs; it returns their new entries, so that the store (and
// master inspect) has the deadlines the master applies.
func (q *Queues) tightenPending() []Record {
	var changed []Record
	for _, it := range slices.Clone(q.timers) {
		e := q.entry(it.task)
		if e.Queue != Pending || e.Epoch != it.epoch {
			continue
		}
		if d := e.Dispatched.Add(q.timeoutAt(it.task, int(q.entries[it.task].depth))); d.Before(e.Deadline) {
			q.entries[it.task].deadline = nanos(d)
			heap.Push(&q.timers, deadlineItem{at: nanos(d), task: it.task, epoch: it.epoch})
			e.Deadline = d
			changed = append(changed, Record{Index: it.task, Entry: e})
		}
	}
	return changed
}

// ProgressShare is the part of a dispatch's expected time its holder is
// asked to report progress every (ProgressEvery): five reports while it
// runs its expected time, so that a straggler (relieved at StragglerFactor
// times that time) has reported, and is split, before twice its time.
const ProgressShare = 5

// ProgressEvery returns how often the holder of the current dispatch of
// task is asked to report progress (wire.Task.ProgressMillis): a
// ProgressShare-th of the dispatch's expected time (the moving average ×
// the records it has left), never under wire.MinProgressInterval nor over
// wire.DefaultProgressInterval; wire.DefaultProgressInterval until the
// average is usable.
func (q *Queues) ProgressEvery(task int) time.Duration {
	if q.avg.filled < q.cfg.MinSamples {
		return wire.DefaultProgressInterval
	}
	left := q.pieces.end(task) - int64(q.entry(task).Progress)
	return progressEvery(q.avg.mean() * float64(max(left, 1)))
}

// progressEvery is ProgressEvery for a dispatch expected to take expected
// seconds.
func progressEvery(expected float64) time.Duration {
	return clampSeconds(expected/ProgressShare, wire.MinProgressInterval, wire.DefaultProgressInterval)
}
