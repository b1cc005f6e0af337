package masterbench

import (
	"context"
	"net/rpc"
	"sync"
	"time"

	"github.com/pkg/errors"

	"github.com/trainmaster/master/go/wire"
)

// fleet is the paced trainers of one row, each named bench-<i> and on a
// connection of its own. While a trainer's goroutine runs, it alone
// touches its entry of held.
type fleet struct {
	trainerConns
	held        []wire.Task // the task each trainer holds, finished in its next GetTask
	progress    bool
	from, until time.Time // the measured window
	requeue     requeueWatch
}

// tally is what one trainer's calls did; its goroutine owns it.
type tally struct {
	getTask, progress callTally
	errors            int // failed calls, in the window or not
	firstErr          error
}

// callTally counts one kind of call begun in the window.
type callTally struct {
	calls, late, noTask int
	latencies           []time.Duration // of the calls answered
}

func (t *tally) fail(err error) {
	if t.errors++; t.firstErr == nil {
		t.firstErr = err
	}
}

// dialFleet connects n trainers to addr, one connection each.
func dialFleet(dial func(string) (*rpc.Client, error), addr string, n int, progress bool) (*fleet, error) {
	t, err := dialTrainers(dial, addr, n, func(i int, err error) error {
		return errors.Wrapf(err, "dial the master for trainer %d of %d", i, n)
	})
	if err != nil {
		return nil, err
	}
	return &fleet{trainerConns: t, held: make([]wire.Task, n), progress: progress}, nil
}

// isVictim says whether trainer i is one of the tenth whose connections
// are closed at once to time the requeue: every tenth, so that their
// phases spread over the period as the others' do.
func isVictim(i int) bool { return i%10 == 0 }

// run has trainer i call on schedule s until ctx ends: GetTask in each
// slot, finishing the task it holds, and with progress a report half a
// period after the slot. A call whose time passed while the previous one
// ran goes at once and counts as late (schedule.next).
func (f *fleet) run(ctx context.Context, i int, s schedule, t *tally) {
	late := false
	for k := 0; ; {
		if !sleepUntil(ctx, s.at(k)) {
			return
		}
		returned, took := f.getTask(i, late, t)
		if took && f.progress {
			due := s.at(k).Add(s.period / 2)
			if !sleepUntil(ctx, due) {
				return
			}
			returned = f.reportProgress(i, returned.After(due), t)
		}
		k, late = s.next(k, returned)
	}
}

// inWindow says whether a call begun at began counts.
func (f *fleet) inWindow(began time.Time) bool { return !began.Before(f.from) && began.Before(f.until) }

// getTask finishes trainer i's task and takes the next; it returns when
// the call returned and whether it took a task.
func (f *fleet) getTask(i int, late bool, t *tally) (time.Time, bool) {
	prev, next := f.held[i], wire.Task{}
	prev.Trainer = f.names[i]
	began := time.Now()
	err := f.conns[i].Call(wire.ServiceName+".GetTask", prev, &next)
	returned := time.Now()
	f.held[i] = next // the zero task after an error: the finish was recorded or is lost with the call
	counted := f.inWindow(began)
	switch {
	case wire.Is(err, wire.TextNoTask):
		if counted {
			t.getTask.noTask++
		}
	case err != nil:
		t.fail(errors.Wrap(err, "GetTask"))
	default:
		f.requeue.saw(next, returned)
	}
	if counted {
		t.getTask.add(began, returned, late, err == nil || wire.Is(err, wire.TextNoTask))
	}
	return returned, err == nil
}

// reportProgress reports one record of trainer i's task trained.
func (f *fleet) reportProgress(i int, late bool, t *tally) time.Time {
	task := f.held[i]
	p := wire.Progress{Index: task.Index, Epoch: task.Epoch, Pass: task.Pass, Gen: task.Gen, Trainer: f.names[i], Done: 1}
	var reply wire.ProgressReply
	began := time.Now()
	err := f.conns[i].Call(wire.ServiceName+".TaskProgress", p, &reply)
	returned := time.Now()
	if err != nil {
		t.fail(errors.Wrap(err, "TaskProgress"))
	}
	if f.inWindow(began) {
		t.progress.add(began, returned, late, err == nil)
	}
	return returned
}

func (c *callTally) add(began, returned time.Time, late, answered bool) {
	c.calls++
	if late {
		c.late++
	}
	if answered {
		c.latencies = append(c.latencies, returned.Sub(began))
	}
}

// taskKey is a dispatch's task: its index in its pass.
type taskKey struct{ index, pass int }

// requeueWatch records when the tasks the closed trainers held are
// dispatched again.
type requeueWatch struct {
	mu          sync.Mutex // guards the fields below
	want        map[taskKey]bool
	first, last time.Time
	done        chan struct{} // closed once every task wanted was seen
}

// arm starts watching for tasks.
func (w *requeueWatch) arm(tasks []wire.Task) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.want = map[taskKey]bool{}
	for _, t := range tasks {
		w.want[taskKey{t.Index, t.Pass}] = true
	}
	w.done = make(chan struct{})
	if len(w.want) == 0 {
		close(w.done)
	}
	return w.done
}

// saw notes a task dispatched at.
func (w *requeueWatch) saw(t wire.Task, at time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	k := taskKey{t.Index, t.Pass}
	if !w.want[k] {
		return
	}
	delete(w.want, k)
	if w.first.IsZero() {
		w.first = at
	}
	w.last = at
	if len(w.want) == 0 {
		close(w.done)
	}
}

// seen returns the first and last dispatch again, and how many of the
// tasks wanted are still out.
func (w *requeueWatch) seen() (first, last time.Time, missing int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.first, w.last, len(w.want)
}
