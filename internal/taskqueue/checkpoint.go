package taskqueue

import (
	"fmt"
	"slices"

	"github.com/pkg/errors"

	"github.com/trainmaster/master/go/wire"
)

// Data checkpoints (wire's checkpoint.go). Trained says what of the
// current pass is trained, from the entries and what the trainers report
// they hold; Rewind takes the queues back to a Trained in a new
// generation of the pass state.
//
// A record is trained when its dispatch reported so: Done entries wholly,
// others up to their Progress, or further where a trainer taking the
// checkpoint reports its position (Held). What a report says past the
// entry's end (a dispatch that trained past a cut it had not learned) is
// clamped to that end: the records past it belong to another entry, which
// says itself whether they are trained.
//
// A rewind makes every entry of the pass anew: each task wholly trained is
// Done; a task trained in part is cut into its trained and untrained runs,
// the first kept by the task's entry, the others pieces; every untrained
// run is in Todo, those of tasks trained in part at its front; every task
// untouched is in Todo as at a pass's start. The entries it makes have
// epoch 0: no dispatch handed them out. Entries stored by an older
// generation are ignored by Restore, as those of another pass are.

// Interval is the positions [From, To) of a task's record order.
type Interval struct{ From, To int }

// Trained is what of one pass is trained.
type Trained struct {
	Pass  int
	Whole []int              // the tasks wholly trained, ascending
	Part  map[int][]Interval // tasks trained in part: their trained runs, ascending, disjoint, apart
}

// Records returns how many records t holds trained, given each task's.
func (t Trained) Records(records func(task int) int64) int64 {
	var n int64
	for _, task := range t.Whole {
		n += records(task)
	}
	for _, runs := range t.Part {
		for _, r := range runs {
			n += int64(r.To - r.From)
		}
	}
	return n
}

// HeldPosition is a trainer's report of a dispatch it holds or held: the
// records of the task's order before Done are trained.
type HeldPosition struct {
	Task, Epoch, Pass, Gen, Done int
}

// Generation is the pass state's generation: 0 until a Rewind, and at
// each a number never used before (the caller's: a rewind whose commit
// failed half way may have left entries of its number in a store, which
// must never come to life). Pass and Left are the pass the last rewind went back to and
// its records not trained then: what a group's ranks share in that pass.
// Mark names the last rewind (its caller's), so that its retries find it
// done. A store keeps it with the pass.
//
// Reserved is the highest generation a rewind of these queues may have
// written entries of, done or not: a store writes it before a rewind's
// entries, so that a rewind whose commit failed half way leaves entries
// of a number no later rewind takes.
type Generation struct {
	Gen      int
	Pass     int
	Left     int64
	Mark     string
	Reserved int
}

// Gen returns the pass state's generation.
func (q *Queues) Gen() Generation { return q.generation }

// Trained returns what of the current pass is trained: the entries', and
// past them the positions held reports; a report of another pass or
// generation, or of a dispatch the task has not had, says nothing. One of
// an earlier dispatch, superseded since, counts: its trainer trained those
// records into the model being saved.
// It also returns the notes a log wants: reports clamped to their entry's
// end. It returns the zero Trained of pass Pass() once all are done.
//
// It costs a read of the Done bits (a word per 64 tasks) and a visit of
// the few entries that can be trained in part (split tasks and pieces,
// progress, reports), not a walk of every entry: the master calls it with
// the dataset's lock held, and a burst of checkpoints calls it for each.
func (q *Queues) Trained(held []HeldPosition) (Trained, []string) {
	t := Trained{Pass: q.pass, Part: map[int][]Interval{}}
	if q.AllDone() {
		return t, nil
	}
	reached := make(map[int]int, len(held)) // entry -> position reported
	var notes []string
	for _, h := range held {
		if h.Pass != q.pass || h.Gen != q.generation.Gen || h.Task < 0 || h.Task >= len(q.entries) {
			continue
		}
		e := q.entry(h.Task)
		if e.Epoch < h.Epoch || e.Queue == Done {
			continue
		}
		end := int(q.pieces.end(h.Task))
		if h.Done > end {
			notes = append(notes, fmt.Sprintf("task %d: trained through %d, past its end %d: the records past it are another entry's", h.Task, h.Done, end))
		}
		reached[h.Task] = max(reached[h.Task], min(h.Done, end))
	}
	runs := map[int][]Interval{} // task -> the trained runs of its entries visited
	visited := map[int]bool{}
	visit := func(i int) {
		if visited[i] || int(q.entries[i].pass) != q.pass {
			return
		}
		visited[i] = true
		e := q.entry(i)
		start, end := e.From, int(q.pieces.end(i))
		upTo := max(e.Progress, reached[i])
		if e.Queue == Done {
			upTo = end
		}
		if _, ok := runs[e.Of]; !ok {
			runs[e.Of] = nil
		}
		if upTo > start {
			runs[e.Of] = append(runs[e.Of], Interval{From: start, To: upTo})
		}
	}
	for i := range q.pieces.spans { // every entry of a split task
		visit(i)
	}
	for i := range q.progress.marks {
		visit(i)
	}
	for i := range reached {
		visit(i)
	}
	whole := q.done.copyFirst(q.tasks)
	for task, rs := range runs {
		whole.unset(task)
		if len(rs) == 0 {
			continue
		}
		rs = joined(rs)
		if len(rs) == 1 && rs[0].From == 0 && int64(rs[0].To) == q.records(task) {
			whole.set(task)
			continue
		}
		t.Part[task] = rs
	}
	t.Whole = whole.members()
	return t, notes
}

// joined sorts runs and joins those that touch or overlap.
func joined(runs []Interval) []Interval {
	slices.SortFunc(runs, func(a, b Interval) int { return a.From - b.From })
	out := runs[:0]
	for _, r := range runs {
		if n := len(out); n > 0 && r.From <= out[n-1].To {
			out[n-1].To = max(out[n-1].To, r.To)
			continue
		}
		out = append(out, r)
	}
	return out
}

// CheckTrained returns an error wrapping wire.ErrBadCheckpoint when t
// cannot be a Trained of these queues' dataset: a pass beyond them, a
// task that does not exist, runs out of order or past a task's end, or
// more pieces than a pass holds.
func (q *Queues) CheckTrained(t Trained) error {
	bad := func(format string, args ...any) error {
		return kindf(wire.ErrBadCheckpoint, "pass %d: %s", t.Pass, fmt.Sprintf(format, args...))
	}
	if t.Pass < 0 || t.Pass > q.end() {
		return bad("the dataset runs %d passes", q.cfg.Passes)
	}
	last := -1
	for _, task := range t.Whole {
		if task <= last || task >= q.tasks {
			return bad("task %d wholly trained (the dataset has %d tasks; tasks ascending)", task, q.tasks)
		}
		last = task
	}
	pieces := 0
	for task, runs := range t.Part {
		if task < 0 || task >= q.tasks || len(runs) == 0 || slices.Contains(t.Whole, task) {
			return bad("task %d trained in part (the dataset has %d tasks)", task, q.tasks)
		}
		at := -1
		for _, r := range runs {
			if r.From <= at || r.To <= r.From || int64(r.To) > q.records(task) {
				return bad("task %d: run %d to %d (runs ascending and apart, within its %d records)", task, r.From, r.To, q.records(task))
			}
			at = r.To
		}
		pieces += piecesOf(runs, int(q.records(task)))
	}
	if pieces > MaxPieces(q.tasks) {
		return bad("%d tasks trained in part need up to %d pieces; a pass holds %d", len(t.Part), pieces, MaxPieces(q.tasks))
	}
	return nil
}

// piecesOf returns how many pieces a rewind cuts a task of end records
// into, trained in runs: one per run, trained or not, after the first.
func piecesOf(runs []Interval, end int) int {
	n := 2*len(runs) - 2 // the runs and the gaps between them, less the task's own entry
	if runs[0].From > 0 {
		n++
	}
	if runs[len(runs)-1].To < end {
		n++
	}
	return n
}

// Rewind takes the queues back to t (checked with CheckTrained) in a new
// generation gen, above the current and reserved ones, named mark: the pass t is of starts again with what t holds
// trained Done and the rest in Todo. Its change writes every entry it
// makes and the pass with the generation, which a store must make
// durable last (entries of a generation newer than the stored one are
// ignored until then).
func (q *Queues) Rewind(t Trained, mark string, gen int) (Change, error) {
	if err := q.CheckTrained(t); err != nil {
		return Change{}, err
	}
	if gen <= max(q.generation.Gen, q.generation.Reserved) {
		return Change{}, errors.Errorf("taskqueue: rewind to generation %d, the state is at %d (reserved %d)", gen, q.generation.Gen, q.generation.Reserved)
	}
	q.generation = Generation{Pass: t.Pass}
	q.startPass(t.Pass) // PassRecords: the whole pass's
	for i := range q.entries {
		q.entries[i].pass = -1 // every entry of the generation before is gone, even of this pass
	}
	left := q.PassRecords() - t.Records(q.records)
	q.generation = Generation{Gen: gen, Pass: t.Pass, Left: left, Mark: mark, Reserved: gen}
	ch := Change{Pass: q.pass, PassChanged: true, Gen: q.generation}
	if q.pass == q.end() {
		return ch, nil
	}
	add := func(c Change) { ch.Records = append(ch.Records, c.Records...) }
	// Tasks trained in part first: their untrained runs go to the front.
	for _, task := range sortedKeys(t.Part) {
		add(q.rewindPart(task, t.Part[task]))
	}
	for _, task := range t.Whole {
		add(q.change(task, Entry{Pass: q.pass, Queue: Done}))
	}
	ch.Pass, ch.PassChanged = q.pass, true // the last task may have ended the pass
	ch.Gen = q.generation
	return ch, nil
}

// rewindPart makes the entries of a task trained in the runs trained: the
// task's entry covers its first run of records, trained or not, and each
// further run is a piece. Untrained runs go to the front of Todo.
func (q *Queues) rewindPart(task int, trained []Interval) Change {
	end := int(q.records(task))
	type run struct {
		Interval
		done bool
	}
	var runs []run
	at := 0
	for _, r := range trained {
		if r.From > at {
			runs = append(runs, run{Interval{at, r.From}, false})
		}
		runs = append(runs, run{r, true})
		at = r.To
	}
	if at < end {
		runs = append(runs, run{Interval{at, end}, false})
	}
	var ch Change
	for i, r := range slices.Backward(runs) {
		e := Entry{Pass: q.pass, Queue: Done, Of: task, From: r.From, To: r.To}
		if !r.done {
			e.Queue, e.Seq, e.Progress = Todo, q.nextFront, r.From
			q.nextFront--
		}
		index := task
		if i > 0 {
			index = len(q.entries)
			q.grow(index)
			q.pieces.relieved++
		} else {
			e.From = 0
			if r.To == end {
				e.To = 0
			}
		}
		ch = ch.Merge(q.change(index, e))
	}
	return ch
}

func sortedKeys[V any](m map[int]V) []int {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
