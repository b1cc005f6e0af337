package taskqueue

import (
	"fmt"
	"math"
)

// MaxPieces returns how many splits and backups a pass of a dataset of
// numTasks tasks may have.
func MaxPieces(numTasks int) int { return numTasks }

// span is an entry's Of, From and To.
type span struct{ of, from, to int }

// pieces owns Entry.Of, From and To: the bounds of the pieces and of the
// tasks split in the current pass (few, so in a map beside the slots),
// and how many stragglers the pass relieved. Invariants: spans has every
// piece of the pass and exactly the tasks with a To; relieved is at
// least the number of pieces and at most MaxPieces(tasks).
type pieces struct {
	tasks    int                  // the dataset's; entries past them are pieces
	records  func(task int) int64 // records of each task
	spans    map[int]span
	relieved int // splits and backups in this pass
}

func newPieces(tasks int, records func(task int) int64) pieces {
	return pieces{tasks: tasks, records: records, spans: map[int]span{}}
}

// apply keeps an entry's bounds: a task's only once it is split.
func (p *pieces) apply(task int, _, e *Entry) {
	if task < p.tasks && e.To == 0 {
		delete(p.spans, task)
		return
	}
	p.spans[task] = span{of: e.Of, from: e.From, to: e.To}
}

// fill sets an entry's bounds; a whole task is its own, from 0 to its end.
func (p *pieces) fill(task int, e *Entry) {
	sp, ok := p.spans[task]
	if !ok {
		sp.of = task
	}
	e.Of, e.From, e.To = sp.of, sp.from, sp.to
}

// startPass forgets the bounds and reliefs of the pass that ended: the
// next starts from whole tasks.
func (p *pieces) startPass() {
	clear(p.spans)
	p.relieved = 0
}

// end returns the position past the last record an entry covers.
func (p *pieces) end(task int) int64 {
	if sp, ok := p.spans[task]; ok && sp.to > 0 {
		return int64(sp.to)
	}
	return p.records(task)
}

// length returns the number of records an entry covers.
func (p *pieces) length(task int) int64 { return p.end(task) - int64(p.spans[task].from) }

// full reports whether the pass has had its MaxPieces reliefs.
func (p *pieces) full() bool { return p.relieved >= MaxPieces(p.tasks) }

// checkSpan checks an entry's bounds, as CheckRecord.
func checkSpan(r Record, numTasks int) error {
	bad := func(format string, args ...any) error {
		return kindf(ErrBadEntry, "task %d: %s", r.Index, fmt.Sprintf(format, args...))
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

// grow makes room for the entries up to index, as untouched in Todo until
// set: a piece being cut, or restored.
func (q *Queues) grow(index int) {
	for len(q.entries) <= index {
		q.entries = append(q.entries, slot{pass: -1})
		q.counts[Todo]++
	}
}

// checkPieces refuses restored pieces with a gap among them (pieces are
// cut and committed in order), and counts the pieces restored as the
// pass's reliefs so far.
func (q *Queues) checkPieces() error {
	for i := q.tasks; i < len(q.entries); i++ {
		if int(q.entries[i].pass) != q.pass {
			return kindf(ErrBadEntry, "piece %d of pass %d is missing, and piece %d is stored", i, q.pass, len(q.entries)-1)
		}
	}
	q.pieces.relieved = len(q.entries) - q.tasks
	return nil
}
