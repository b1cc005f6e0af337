package clienttest

import (
	"path/filepath"
	"slices"
	"time"

	"github.com/pkg/errors"

	"github.com/trainmaster/master/go/recordio"
	"github.com/trainmaster/master/go/wire"
)

type dispatch struct {
	epoch int
	at    time.Time
}

// queue is the fake master's bookkeeping; Master.mu guards it.
type queue struct {
	opt      Options
	tasks    []wire.Task // nil until a dataset is reported
	pass     int
	allDone  bool
	todo     []int
	pending  map[int]dispatch
	done     map[int]bool // done, or failed and dropped, in this pass
	epochs   map[int]int
	finished map[[2]int]bool // (pass, task) finishes recorded
}

func newQueue(opt Options) queue {
	return queue{opt: opt, finished: map[[2]int]bool{}}
}

// report builds the tasks from the files the patterns match; a second
// report changes nothing.
func (q *queue) report(patterns []string) error {
	if q.tasks != nil {
		return nil
	}
	var files []string
	for _, p := range patterns {
		matches, err := filepath.Glob(p)
		if err != nil || len(matches) == 0 {
			return errors.Errorf("pattern %q matches no file", p)
		}
		files = append(files, matches...)
	}
	slices.Sort(files)
	var blocks []wire.Block
	for _, f := range slices.Compact(files) {
		ix, err := recordio.IndexFile(f)
		if err != nil {
			return err
		}
		for i, c := range ix.Chunks {
			blocks = append(blocks, wire.Block{Path: f, Idx: i, Offset: c.Offset, NumRecords: int(c.NumRecords)})
		}
	}
	for i := 0; i < len(blocks); i += q.opt.ChunksPerTask {
		end := min(i+q.opt.ChunksPerTask, len(blocks))
		q.tasks = append(q.tasks, wire.Task{Index: len(q.tasks), Blocks: blocks[i:end:end]})
	}
	q.startPass(0)
	return nil
}

func (q *queue) startPass(pass int) {
	q.pass = pass
	q.todo = q.todo[:0]
	for i := range q.tasks {
		q.todo = append(q.todo, i)
	}
	q.pending, q.done, q.epochs = map[int]dispatch{}, map[int]bool{}, map[int]int{}
}

// get records finished, if any, then hands out the next task: of pass
// finished.Pass only, if finished.OnePass (wire.Task.OnePass).
func (q *queue) get(finished wire.Task, reply *wire.Task) (wire.Report, error) {
	if q.tasks == nil {
		return 0, wire.ErrNoDataset
	}
	var r wire.Report
	if finished.Epoch != 0 {
		var err error
		if r, err = q.finish(finished); err != nil {
			return r, err
		}
	}
	if q.allDone {
		return r, wire.ErrAllDone
	}
	if finished.OnePass && finished.Pass != q.pass {
		return r, wire.ErrPassOver
	}
	q.requeueExpired(time.Now())
	if len(q.todo) == 0 {
		return r, wire.ErrNoTask
	}
	i := q.todo[0]
	q.todo = q.todo[1:]
	q.epochs[i]++
	q.pending[i] = dispatch{epoch: q.epochs[i], at: time.Now()}
	*reply = q.tasks[i]
	reply.Epoch, reply.Pass = q.epochs[i], q.pass
	reply.ProgressMillis = q.opt.ProgressMillis
	if q.opt.Seed != 0 {
		reply.Seed = wire.TaskSeed(q.opt.Seed, q.pass, i)
	}
	return r, nil
}

func (q *queue) requeueExpired(now time.Time) {
	if q.opt.Timeout <= 0 {
		return
	}
	var expired []int
	for i, d := range q.pending {
		if now.Sub(d.at) >= q.opt.Timeout {
			expired = append(expired, i)
		}
	}
	slices.Sort(expired)
	for _, i := range expired {
		delete(q.pending, i)
		q.todo = append(q.todo, i)
	}
}

// check sorts out reports of bad or past tasks.
func (q *queue) check(t wire.Task) (stale bool, err error) {
	switch {
	case q.tasks == nil:
		return false, wire.ErrNoDataset
	case t.Index < 0 || t.Index >= len(q.tasks) || t.Epoch < 1 || t.Pass > q.pass:
		return false, wire.WithKind(errBadReport, errors.Errorf("task %d epoch %d pass %d", t.Index, t.Epoch, t.Pass))
	}
	return q.allDone || t.Pass < q.pass, nil
}

// finish moves a task of the current pass to done, whatever its state.
func (q *queue) finish(t wire.Task) (wire.Report, error) {
	stale, err := q.check(t)
	switch {
	case err != nil:
		return 0, err
	case stale:
		return wire.StalePass, nil
	case q.done[t.Index]:
		return wire.AlreadyDone, nil
	}
	delete(q.pending, t.Index)
	q.todo = slices.DeleteFunc(q.todo, func(i int) bool { return i == t.Index })
	q.done[t.Index] = true
	q.finished[[2]int{t.Pass, t.Index}] = true
	q.advance()
	return wire.Recorded, nil
}

// fail takes a task's current dispatch back.
func (q *queue) fail(t wire.Task) (wire.Report, error) {
	stale, err := q.check(t)
	switch {
	case err != nil:
		return 0, err
	case stale:
		return wire.StalePass, nil
	}
	if d, ok := q.pending[t.Index]; !ok || d.epoch != t.Epoch {
		return wire.Superseded, nil
	}
	delete(q.pending, t.Index)
	if q.opt.RequeueFailed {
		q.todo = append(q.todo, t.Index)
	} else {
		q.done[t.Index] = true
	}
	q.advance()
	return wire.Recorded, nil
}

// advance starts the next pass, or ends them all, once nothing is left.
func (q *queue) advance() {
	if len(q.todo) > 0 || len(q.pending) > 0 {
		return
	}
	if q.pass+1 >= q.opt.Passes {
		q.allDone = true
		return
	}
	q.startPass(q.pass + 1)
}
