package monitor

import (
	"container/list"
	"maps"
	"slices"
	"time"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/master"
	"github.com/trainmaster/master/internal/statusapi"
)

// trainer is what the monitor keeps of one trainer.
type trainer struct {
	name                     string
	firstSeen, lastSeen      time.Time
	pass                     int // the pass tasksPass and recordsPass count
	tasksPass, recordsPass   int64
	tasksTotal, recordsTotal int64
	failures, timeouts       int64
	timedOutSinceSeen        bool
	held                     map[taskKey]heldSince // the tasks it holds
	rate                     window
	lru                      *list.Element // in trainers.idle; nil while it holds a task
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

type heldSince struct {
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

// trainers tracks the trainers that hold a task of this term, all of them,
// and at most max trainers in all: when a trainer that holds nothing calls
// with the table full, the least recently seen trainer holding nothing is
// dropped, or, when every trainer holds a task, the caller is left out. A
// trainer is never dropped while it holds a task, so that a flood of names
// cannot hide the trainers a job waits for; there are never more holders
// than tasks pending, which bounds the table to the larger of max and the
// tasks held at once. Not safe for concurrent use: Monitor holds its lock
// around every call.
type trainers struct {
	max     int
	byName  map[string]*trainer
	idle    *list.List // of *trainer holding nothing, most recently seen first
	holders map[taskKey]*trainer
	left    untracked // the trainers dropped or left out for want of room
}

func newTrainers(max int) *trainers {
	return &trainers{max: max, byName: map[string]*trainer{}, idle: list.New(), holders: map[taskKey]*trainer{}, left: newUntracked(max)}
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

// add adds a trainer called name, seen at now.
func (ts *trainers) add(name string, now time.Time) *trainer {
	t := &trainer{name: name, firstSeen: now, lastSeen: now, held: map[taskKey]heldSince{}, rate: newWindow(trainerSlot, trainerSlots)}
	t.lru = ts.idle.PushFront(t)
	ts.byName[name] = t
	ts.left.remove(name)
	return t
}

// touch marks t seen at now.
func (ts *trainers) touch(t *trainer, now time.Time) {
	if t.lru != nil {
		ts.idle.MoveToFront(t.lru)
	}
	if now.After(t.lastSeen) {
		t.lastSeen = now
	}
}

// makeRoom drops the least recently seen trainers holding nothing until
// there is room for one more, and reports whether there is.
func (ts *trainers) makeRoom() bool {
	for len(ts.byName) >= ts.max {
		back := ts.idle.Back()
		if back == nil {
			return false
		}
		t := back.Value.(*trainer)
		ts.drop(t)
		ts.left.add(t.name, t.lastSeen)
	}
	return true
}

// drop forgets t, which holds nothing.
func (ts *trainers) drop(t *trainer) {
	ts.idle.Remove(t.lru)
	delete(ts.byName, t.name)
}

// forget drops the trainers not seen since before cutoff, but for those
// holding a task: they stay, to be shown stalled. The trainers left out
// and not seen since cutoff are no longer counted either.
func (ts *trainers) forget(cutoff time.Time) {
	for e := ts.idle.Back(); e != nil; {
		t, prev := e.Value.(*trainer), e.Prev()
		if !t.lastSeen.Before(cutoff) {
			break // the rest were seen later
		}
		ts.drop(t)
		e = prev
	}
	ts.left.forget(cutoff)
}

// hold records that t holds task since at.
func (ts *trainers) hold(t *trainer, task taskKey, pass int, at time.Time) {
	ts.release(task)
	t.held[task] = heldSince{pass: pass, since: at}
	ts.holders[task] = t
	if t.lru != nil {
		ts.idle.Remove(t.lru)
		t.lru = nil
	}
}

// release forgets who holds task and returns it (nil: nobody known).
func (ts *trainers) release(task taskKey) *trainer {
	t := ts.holders[task]
	if t == nil {
		return nil
	}
	delete(t.held, task)
	delete(ts.holders, task)
	if len(t.held) == 0 {
		ts.setIdle(t)
	}
	return t
}

// setIdle puts t, which no longer holds a task, among the idle trainers
// in the order of their last calls.
func (ts *trainers) setIdle(t *trainer) {
	for e := ts.idle.Front(); e != nil; e = e.Next() {
		if !e.Value.(*trainer).lastSeen.After(t.lastSeen) {
			t.lru = ts.idle.InsertBefore(t, e)
			return
		}
	}
	t.lru = ts.idle.PushBack(t)
}

// newTerm forgets who holds what: another master may have dispatched
// since this one last led. Every trainer then holds nothing.
func (ts *trainers) newTerm() {
	for task, t := range ts.holders {
		delete(t.held, task)
	}
	clear(ts.holders)
	all := slices.SortedFunc(maps.Values(ts.byName), func(a, b *trainer) int { return b.lastSeen.Compare(a.lastSeen) })
	ts.idle.Init()
	for _, t := range all {
		t.lru = ts.idle.PushBack(t)
	}
}

// untracked counts the trainers that called but are not tracked for want
// of room, until ForgetAfter after their last call (when a tracked one
// would be forgotten). It remembers the names of the latest max of them,
// so that one that comes back is no longer counted; beyond those, it
// counts the others until the latest of their calls is ForgetAfter old: a
// name among those that comes back is counted twice until then.
type untracked struct {
	max      int
	names    map[string]*list.Element // of leftOut
	order    *list.List               // of leftOut, latest left out first
	more     int                      // left out beyond the names remembered
	moreSeen time.Time                // the latest call of those
}

// leftOut is a trainer not tracked, and when it last called.
type leftOut struct {
	name     string
	lastSeen time.Time
}

func newUntracked(max int) untracked {
	return untracked{max: max, names: map[string]*list.Element{}, order: list.New()}
}

// count returns how many trainers are not tracked.
func (u *untracked) count() int { return len(u.names) + u.more }

// add counts the trainer called name, last seen at, as not tracked.
func (u *untracked) add(name string, at time.Time) {
	if e, ok := u.names[name]; ok {
		e.Value = leftOut{name: name, lastSeen: at}
		u.order.MoveToFront(e)
		return
	}
	u.names[name] = u.order.PushFront(leftOut{name: name, lastSeen: at})
	if len(u.names) > u.max {
		oldest := u.order.Remove(u.order.Back()).(leftOut)
		delete(u.names, oldest.name)
		u.more++
		if oldest.lastSeen.After(u.moreSeen) {
			u.moreSeen = oldest.lastSeen
		}
	}
}

// remove stops counting the trainer called name: it is tracked again.
func (u *untracked) remove(name string) {
	if e, ok := u.names[name]; ok {
		u.order.Remove(e)
		delete(u.names, name)
	}
}

// forget stops counting the trainers not seen since before cutoff.
func (u *untracked) forget(cutoff time.Time) {
	for e := u.order.Front(); e != nil; {
		next := e.Next()
		if l := e.Value.(leftOut); l.lastSeen.Before(cutoff) {
			u.order.Remove(e)
			delete(u.names, l.name)
		}
		e = next
	}
	if u.moreSeen.Before(cutoff) {
		u.more = 0
	}
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
func (t *trainer) oldest() (task taskKey, h heldSince, ok bool) {
	for i, hs := range t.held {
		if !ok || hs.since.Before(h.since) || (hs.since.Equal(h.since) && i.less(task)) {
			task, h, ok = i, hs, true
		}
	}
	return task, h, ok
}

// status returns t's figures at now, in pass (-1: its latest); stallAfter
// is how long a trainer may stay silent before it is marked stalled.
func (t *trainer) status(now time.Time, pass int, stallAfter time.Duration) statusapi.TrainerStatus {
	st := statusapi.TrainerStatus{
		Name: t.name, TasksTotal: t.tasksTotal, RecordsTotal: t.recordsTotal,
		RecordsPerSecond: t.rate.rate(now, t.firstSeen, rateSpan),
		Holding:          len(t.held), Failures: t.failures, Timeouts: t.timeouts, LastSeen: t.lastSeen.UTC(),
		Stalled: t.timedOutSinceSeen || now.Sub(t.lastSeen) > stallAfter,
	}
	if pass < 0 || t.pass == pass {
		st.TasksPass, st.RecordsPass = t.tasksPass, t.recordsPass
	}
	if task, h, ok := t.oldest(); ok {
		st.Task = &statusapi.HeldTask{Dataset: task.dataset, Index: task.index, Pass: h.pass, Since: h.since.UTC(), HeldSeconds: now.Sub(h.since).Seconds()}
	}
	return st
}
