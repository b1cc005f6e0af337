package taskqueue

import (
	"container/heap"
	"time"
)

// Pass returns the current pass; it equals Passes once all are done.
func (q *Queues) Pass() int { return q.pass }

// Passes returns the number of passes configured; 0 for queues without
// end (Config.Endless).
func (q *Queues) Passes() int { return q.cfg.Passes }

// AllDone reports whether every pass is over; never for queues without
// end (but at their counter's bound, Config.Endless).
func (q *Queues) AllDone() bool { return q.pass == q.end() }

// NumTasks returns the number of tasks of the dataset.
func (q *Queues) NumTasks() int { return q.tasks }

// Pieces returns the number of pieces cut from tasks in the current pass
// (stragglers.go); their indexes follow the tasks'.
func (q *Queues) Pieces() int { return len(q.entries) - q.tasks }

// Length returns the number of records an entry covers: its task's, less
// what was cut off it, or its piece's. It needs the entry only, so that it
// can be asked about a change after the pass of its entries ended.
func (q *Queues) Length(e Entry) int64 {
	if e.To > 0 {
		return int64(e.To - e.From)
	}
	return q.records(e.Of)
}

// Count returns how many tasks are in a queue in the current pass.
func (q *Queues) Count(queue Queue) int { return q.counts[queue] }

// DoneRecords returns the records of the tasks Done in the current pass.
func (q *Queues) DoneRecords() int64 { return q.doneRecs }

// Entry returns a task's entry in the current pass.
func (q *Queues) Entry(task int) Entry { return q.entry(task) }

// Tasks returns the tasks and pieces in a queue, in index order.
func (q *Queues) Tasks(queue Queue) []Record { return q.FirstTasks(queue, len(q.entries)) }

// FirstTasks returns the first n tasks and pieces in a queue, in index order.
func (q *Queues) FirstTasks(queue Queue, n int) []Record {
	var out []Record
	for i := range q.entries {
		if len(out) >= n || q.counts[queue] == len(out) {
			break
		}
		if e := q.entry(i); e.Queue == queue {
			out = append(out, Record{Index: i, Entry: e})
		}
	}
	return out
}

// NextDeadline returns the earliest deadline of a pending dispatch.
func (q *Queues) NextDeadline() (time.Time, bool) {
	for len(q.timers) > 0 {
		it := q.timers[0]
		if e := q.entry(it.task); e.Queue == Pending && e.Epoch == it.epoch {
			return fromNanos(it.at), true
		}
		heap.Pop(&q.timers)
	}
	return time.Time{}, false
}

// Timeout returns the timeout a dispatch of the task would get now.
func (q *Queues) Timeout(task int) time.Duration { return q.timeoutFor(q.pieces.length(task)) }
