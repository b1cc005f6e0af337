package monitor

import (
	"slices"
	"time"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/master"
)

// trainer is what the monitor keeps of one trainer: about 530 bytes with
// its share of the maps (BenchmarkTrainerMemory), so that the largest
// table (Config.MaxTrainers) fits in tens of megabytes.
type trainer struct {
	name                string
	firstSeen, lastSeen time.Time
	// touched is the later of its last call and the return of its last
	// task: the idle list's order, and what ForgetAfter counts from.
	touched                  time.Time
	pass                     int // the pass tasksPass and recordsPass count
	tasksPass, recordsPass   int64
	tasksTotal, recordsTotal int64
	failures, timeouts       int64
	// timedOut and lost: since its last call, a task it held timed out,
	// or went back because it had no connection for the trainer grace.
	timedOut, lost bool
	held           []heldTask // the tasks it holds, in the order handed
	rate           window
	// prev and next link it in trainers.idle, where it is while it holds
	// nothing.
	prev, next *trainer
}

// taskKey names a task of the job: its dataset and its index there (the
// datasets number their tasks each from 0).
type taskKey struct {
	dataset string
	index   int
}

// key returns the task ev describes; an event naming no dataset is of
// wire.DefaultDataset.
func key(ev master.TaskEvent) taskKey {
	return taskKey{dataset: wire.DatasetName(ev.Dataset), index: ev.Index}
}

// less orders tasks by dataset, then index.
func (k taskKey) less(o taskKey) bool {
	return k.dataset < o.dataset || k.dataset == o.dataset && k.index < o.index
}

// heldTask is a task a trainer holds, since its dispatch.
type heldTask struct {
	task  taskKey
	pass  int
	since time.Time
}

// trainerRate is the per-trainer rate's resolution: 12 slots of 5 s, one
// minute.
const (
	trainerSlot  = 5 * time.Second
	trainerSlots = 12
	rateSpan     = time.Minute
)

// trainers tracks every trainer that holds a task of this term, and the
// others up to max trainers in all: when a trainer that holds nothing
// calls with the table full, the least recently touched trainer holding
// nothing is dropped, or, when every trainer holds a task, the caller is
// left out. A trainer is never dropped while it holds a task, so that a
// flood of names cannot hide the trainers a job waits for; there are
// never more holders than tasks pending, which bounds the table to the
// larger of max and the tasks held at once. Every operation told of a
// call or a task is O(1) (but for the tasks one trainer holds at once).
// Not safe for concurrent use: Monitor holds its lock around every call.
type trainers struct {
	max     int
	byName  map[string]*trainer
	idle    idleList // the trainers holding nothing, most recently touched first
	holders map[taskKey]*trainer
	left    untracked // the trainers dropped or left out for want of room
}

func newTrainers(max int) *trainers {
	return &trainers{max: max, byName: map[string]*trainer{}, holders: map[taskKey]*trainer{}, left: newUntracked(max)}
}

// seen returns the trainer called name, added if new, as seen at now; nil
// when it is new and no trainer can be dropped to make room for it.
func (ts *trainers) seen(name string, now time.Time) *trainer {
	if t, ok := ts.byName[name]; ok {
		ts.touch(t, now)
		return t
	}
	if !ts.makeRoom() {
		ts.left.add(name, now)
		return nil
	}
	return ts.add(name, now)
}

// holder returns the trainer called name, added if new, as seen at now,
// for a task handed to it: a trainer about to hold a task is always added.
func (ts *trainers) holder(name string, now time.Time) *trainer {
	if t, ok := ts.byName[name]; ok {
		ts.touch(t, now)
		return t
	}
	ts.makeRoom()
	return ts.add(name, now)
}

// add adds a trainer called name, seen at now, holding nothing.
func (ts *trainers) add(name string, now time.Time) *trainer {
	t := &trainer{name: name, firstSeen: now, lastSeen: now, touched: now, rate: newWindow(trainerSlot, trainerSlots)}
	ts.idle.pushFront(t)
	ts.byName[name] = t
	ts.left.remove(name)
	return t
}

// touch marks t seen at now.
func (ts *trainers) touch(t *trainer, now time.Time) {
	t.lastSeen = later(t.lastSeen, now)
	t.touched = later(t.touched, now)
	if len(t.held) == 0 {
		ts.idle.remove(t)
		ts.idle.pushFront(t)
	}
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// makeRoom drops the least recently touched trainers holding nothing
// until there is room for one more, and reports whether there is.
func (ts *trainers) makeRoom() bool {
	for len(ts.byName) >= ts.max {
		t := ts.idle.back
		if t == nil {
			return false
		}
		ts.drop(t)
		ts.left.add(t.name, t.lastSeen)
	}
	return true
}

// drop forgets t, which holds nothing.
func (ts *trainers) drop(t *trainer) {
	ts.idle.remove(t)
	delete(ts.byName, t.name)
}

// forget drops the trainers holding nothing that were last touched before
// cutoff: a trainer holding a task stays, to be shown stalled. The
// trainers left out and not seen since cutoff are no longer counted
// either.
func (ts *trainers) forget(cutoff time.Time) {
	for t := ts.idle.back; t != nil && t.touched.Before(cutoff); t = ts.idle.back {
		ts.drop(t)
	}
	ts.left.forget(cutoff)
}

// hold records that t holds task since at.
func (ts *trainers) hold(t *trainer, task taskKey, pass int, at time.Time) {
	ts.release(task, at)
	if len(t.held) == 0 {
		ts.idle.remove(t)
	}
	t.held = append(t.held, heldTask{task: task, pass: pass, since: at})
	ts.holders[task] = t
}

// release forgets who holds task, back at at, and returns it (nil:
// nobody known) and since when it held the task.
func (ts *trainers) release(task taskKey, at time.Time) (*trainer, time.Time) {
	t := ts.holders[task]
	if t == nil {
		return nil, time.Time{}
	}
	delete(ts.holders, task)
	i := slices.IndexFunc(t.held, func(h heldTask) bool { return h.task == task }) // there once: hold releases first
	since := t.held[i].since
	t.held = slices.Delete(t.held, i, i+1)
	if len(t.held) == 0 {
		t.touched = later(t.touched, at)
		ts.idle.pushFront(t)
	}
	return t, since
}

// newTerm forgets who holds what: another master may have dispatched
// since this one last led. Every trainer then holds nothing, and is idle
// in the order it was last touched.
func (ts *trainers) newTerm() {
	clear(ts.holders)
	all := make([]*trainer, 0, len(ts.byName))
	for _, t := range ts.byName {
		t.held = nil
		all = append(all, t)
	}
	slices.SortFunc(all, func(a, b *trainer) int { return a.touched.Compare(b.touched) })
	ts.idle = idleList{}
	for _, t := range all {
		ts.idle.pushFront(t)
	}
}

// idleList links the trainers holding nothing through their prev and
// next, front first.
type idleList struct{ front, back *trainer }

// pushFront puts t, in no list, at the front.
func (l *idleList) pushFront(t *trainer) {
	t.prev, t.next = nil, l.front
	if l.front != nil {
		l.front.prev = t
	} else {
		l.back = t
	}
	l.front = t
}

// remove takes t, in l, out of it.
func (l *idleList) remove(t *trainer) {
	if t.prev != nil {
		t.prev.next = t.next
	} else {
		l.front = t.next
	}
	if t.next != nil {
		t.next.prev = t.prev
	} else {
		l.back = t.prev
	}
	t.prev, t.next = nil, nil
}

// finished counts a finished task of records in pass of dataset to t: in
// its totals and its rate whatever the dataset, in its pass figures when
// the dataset is train (the pass the page shows is train's).
func (t *trainer) finished(dataset string, pass int, records int64, at time.Time) {
	t.tasksTotal++
	t.recordsTotal += records
	t.rate.add(at, records)
	if dataset != wire.DefaultDataset {
		return
	}
	if pass > t.pass {
		t.pass, t.tasksPass, t.recordsPass = pass, 0, 0
	}
	if pass == t.pass {
		t.tasksPass++
		t.recordsPass += records
	}
}

// oldest returns the task t has held longest.
func (t *trainer) oldest() (h heldTask, ok bool) {
	for _, o := range t.held {
		if !ok || o.since.Before(h.since) || (o.since.Equal(h.since) && o.task.less(h.task)) {
			h, ok = o, true
		}
	}
	return h, ok
}
