package monitor

import (
	"container/list"
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
	lru                      *list.Element
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

// trainers tracks at most max trainers, least recently seen dropped first,
// and knows which trainer holds each pending task of this term. Not safe
// for concurrent use: Monitor holds its lock around every call.
type trainers struct {
	max     int
	byName  map[string]*trainer
	recent  *list.List // of *trainer, most recently seen first
	holders map[taskKey]*trainer
}

func newTrainers(max int) *trainers {
	return &trainers{max: max, byName: map[string]*trainer{}, recent: list.New(), holders: map[taskKey]*trainer{}}
}

// seen returns the trainer called name, added if new, as seen at now.
func (ts *trainers) seen(name string, now time.Time) *trainer {
	t, ok := ts.byName[name]
	if !ok {
		for len(ts.byName) >= ts.max {
			ts.drop(ts.recent.Back().Value.(*trainer))
		}
		t = &trainer{name: name, firstSeen: now, held: map[taskKey]heldSince{}, rate: newWindow(trainerSlot, trainerSlots)}
		t.lru = ts.recent.PushFront(t)
		ts.byName[name] = t
	} else {
		ts.recent.MoveToFront(t.lru)
	}
	if now.After(t.lastSeen) {
		t.lastSeen = now
	}
	return t
}

// drop forgets t and the tasks it holds.
func (ts *trainers) drop(t *trainer) {
	for task := range t.held {
		delete(ts.holders, task)
	}
	ts.recent.Remove(t.lru)
	delete(ts.byName, t.name)
}

// forget drops the trainers not seen since before cutoff, but for those
// holding a task: they stay, to be shown stalled.
func (ts *trainers) forget(cutoff time.Time) {
	for e := ts.recent.Back(); e != nil; {
		t, prev := e.Value.(*trainer), e.Prev()
		if !t.lastSeen.Before(cutoff) {
			return // the rest were seen later
		}
		if len(t.held) == 0 {
			ts.drop(t)
		}
		e = prev
	}
}

// hold records that t holds task since at.
func (ts *trainers) hold(t *trainer, task taskKey, pass int, at time.Time) {
	ts.release(task)
	t.held[task] = heldSince{pass: pass, since: at}
	ts.holders[task] = t
}

// release forgets who holds task and returns it (nil: nobody known).
func (ts *trainers) release(task taskKey) *trainer {
	t := ts.holders[task]
	if t != nil {
		delete(t.held, task)
		delete(ts.holders, task)
	}
	return t
}

// newTerm forgets who holds what: another master may have dispatched
// since this one last led.
func (ts *trainers) newTerm() {
	for task, t := range ts.holders {
		delete(t.held, task)
	}
	clear(ts.holders)
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
