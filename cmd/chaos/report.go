package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pkg/errors"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/trainmaster/master/go/client"
	"github.com/trainmaster/master/go/recordio"
	"github.com/trainmaster/master/internal/dataset"
)

// report gathers what happened and what it proves.
type report struct {
	mu        sync.Mutex
	faults    map[string]int
	failovers []time.Duration
	notes     []string
	rejected  int
	duration  time.Duration

	consumed map[[2]int][]taskLine // {pass, task} -> each complete consumption (of a task, or of a piece of it)
	doneSet  map[[2]int]int        // {pass, task or piece} -> transitions to done seen in etcd
	written  map[[2]int]bool       // {pass, task or piece} -> an entry was written (a piece exists)
	passes   []int                 // values of the pass key, in order
	gens     []int                 // the generation with each of passes (a rewind starts one)
	g        groupFacts            // group mode's figures (model.go)

	// The tasks each fault affected, until they leave their trainer:
	// watched by task, and how long they took to be back in todo, or how
	// many stayed with their trainer (finished by it), by fault kind.
	watched   map[int]affected
	backTodo  map[string][]time.Duration
	stayed    map[string]int
	faultedBy map[[2]int]string // {pass, task} -> the kind of the last fault that affected it

	lost, wrong, duplicates, dupRecords, doneTwice, doneNever int
	killed                                                    map[string]bool // trainers killed with kill -9, by name
	pieces                                                    int             // pieces cut from stragglers (-stragglers), from etcd
	splits, backups                                           int             // stragglers relieved, from the masters' logs
	passBack                                                  bool
	records                                                   int64
	twice                                                     map[string]int64 // records trained twice, by the fault that affected their task
}

// affected is a task a fault affected, held by trainer when it happened.
type affected struct {
	kind, trainer string
	pass          int
	at            time.Time
}

// storedEntry is what the report reads of a task's entry in etcd.
type storedEntry struct {
	Pass    int    `json:"pass"`
	Queue   string `json:"queue"`
	Trainer string `json:"trainer"`
}

// taskOf is the task of an entry's key.
func taskOf(key string) int {
	var task int
	fmt.Sscanf(strings.TrimPrefix(key, "/task_queues/train/tasks/"), "%d", &task)
	return task
}

// affect starts watching a task a fault of kind affected at at.
func (r *report) affect(task int, e storedEntry, kind string, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.watched[task] = affected{kind: kind, trainer: e.Trainer, pass: e.Pass, at: at}
	r.faultedBy[[2]int{e.Pass, task}] = kind
}

type taskLine struct {
	Pass    int    `json:"pass"`
	Task    *int   `json:"task"`
	From    int    `json:"from"`
	Records int64  `json:"records"`
	Digest  string `json:"digest"`
}

func newReport() *report {
	return &report{faults: map[string]int{}, consumed: map[[2]int][]taskLine{}, doneSet: map[[2]int]int{}, written: map[[2]int]bool{}, killed: map[string]bool{},
		watched: map[int]affected{}, backTodo: map[string][]time.Duration{}, stayed: map[string]int{},
		faultedBy: map[[2]int]string{}, twice: map[string]int64{}, g: newGroupFacts()}
}

func (r *report) fault(kind string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.faults[kind]++
}

func (r *report) failover(d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failovers = append(r.failovers, d)
}

func (r *report) note(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notes = append(r.notes, s)
}

// trainerKilled notes that the trainer of that name was killed.
func (r *report) trainerKilled(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.killed[name] = true
}

func (r *report) count(n *int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	*n++
}

// trainerLine records a per-task line of a trainer's -json output.
func (r *report) trainerLine(line string) {
	var l taskLine
	if json.Unmarshal([]byte(line), &l) != nil || l.Task == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.consumed[[2]int{l.Pass, *l.Task}] = append(r.consumed[[2]int{l.Pass, *l.Task}], l)
}

// watch follows every change of the persisted queues, from the first
// revision, counting transitions to done and the values of the pass.
func (r *report) watch(ctx context.Context, cli *clientv3.Client) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for wr := range cli.Watch(ctx, "/task_queues/", clientv3.WithPrefix(), clientv3.WithRev(1), clientv3.WithPrevKV()) {
			for _, ev := range wr.Events {
				r.event(ev)
			}
		}
	}()
	return done
}

func (r *report) event(ev *clientv3.Event) {
	key := string(ev.Kv.Key)
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case key == "/task_queues/train/pass" && ev.Type == clientv3.EventTypePut:
		var p struct{ Pass, Gen int }
		json.Unmarshal(ev.Kv.Value, &p)
		r.passes, r.gens = append(r.passes, p.Pass), append(r.gens, p.Gen)
	case strings.HasPrefix(key, "/task_queues/train/tasks/") && ev.Type == clientv3.EventTypePut:
		var e, prev storedEntry
		json.Unmarshal(ev.Kv.Value, &e)
		if ev.PrevKv != nil {
			json.Unmarshal(ev.PrevKv.Value, &prev)
		}
		task := taskOf(key)
		r.written[[2]int{e.Pass, task}] = true
		if e.Queue == "done" && !(prev.Queue == "done" && prev.Pass == e.Pass) {
			r.doneSet[[2]int{e.Pass, task}]++
		}
		r.left(task, e, time.Now())
	}
}

// left ends the watch of an affected task whose entry changed to e: back
// in todo, or done by its trainer. A change that leaves it pending with
// its trainer (progress, a new deadline) is not the end.
func (r *report) left(task int, e storedEntry, now time.Time) {
	a, ok := r.watched[task]
	switch {
	case !ok || (e.Queue == "pending" && e.Trainer == a.trainer && e.Pass == a.pass):
		return
	case e.Queue == "todo" && e.Pass == a.pass:
		r.backTodo[a.kind] = append(r.backTodo[a.kind], now.Sub(a.at))
	default:
		r.stayed[a.kind]++
	}
	delete(r.watched, task)
}

// verify compares what was consumed and committed with the dataset; in
// group mode, the final model's history (model) too.
func (r *report) verify(pattern string, o options, model []segment) error {
	ds, err := dataset.Build([]string{pattern}, o.chunkTask)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records = ds.NumRecords() * int64(o.passes)
	if !o.independent {
		return r.verifyGroup(ds, o, model)
	}
	traces, byKilled, err := readTraces(o.dir, r.killed)
	if err != nil {
		return err
	}
	for task := range ds.NumTasks() {
		suffixes, err := taskDigests(ds, task)
		if err != nil {
			return err
		}
		n := len(suffixes) - 1 // the task's records
		for pass := range o.passes {
			trained := traces[[2]int{pass, task}]
			for pos := range n {
				switch times := at(trained, pos); {
				case times == 0:
					r.lost++
				case times > 1 && at(byKilled[[2]int{pass, task}], pos):
					// A killed trainer trained one of its copies: its
					// kill, not a later fault of the task, made it twice.
					r.twice["kill -9 trainer"] += int64(times - 1)
				case times > 1:
					r.twice[r.kindOf(pass, task)] += int64(times - 1)
				}
			}
			r.checkConsumed(r.consumed[[2]int{pass, task}], suffixes)
			r.checkDone([2]int{pass, task})
		}
	}
	// Pieces (-stragglers) follow the tasks; each one written is done
	// once in its pass.
	for k := range r.written {
		if k[1] < ds.NumTasks() {
			continue
		}
		r.pieces++
		r.checkDone(k)
	}
	r.passBack = !slices.IsSorted(r.passes) || len(r.passes) == 0 || r.passes[len(r.passes)-1] != o.passes
	return nil
}

// taskDigests returns the digests of the suffixes of a task's records
// (client.SuffixDigests): one more than its records.
func taskDigests(ds *dataset.Dataset, task int) ([]client.Digest, error) {
	var refs []recordio.ChunkRef
	for _, b := range ds.Blocks(task) {
		refs = append(refs, recordio.ChunkRef{Path: b.Path, Chunk: b.Idx, Offset: b.Offset})
	}
	return client.SuffixDigests(recordio.NewScanner(refs), nil)
}

// checkDone counts a task (or piece) of a pass not Done exactly once in
// etcd, and notes which.
func (r *report) checkDone(k [2]int) {
	n := r.doneSet[k]
	switch {
	case n == 0:
		r.doneNever++
	case n > 1:
		r.doneTwice++
	default:
		return
	}
	r.notes = append(r.notes, fmt.Sprintf("task %d of pass %d: Done %d times in etcd's history as the watch saw it", k[1], k[0], n))
}

// checkConsumed checks a task's consumptions in a pass (the trainers'
// lines: a range of its records, from From, and their digest) against the
// digests of its records' suffixes, and counts the records consumed more
// than once. A task split for a straggler has one line per part.
func (r *report) checkConsumed(lines []taskLine, suffixes []client.Digest) {
	n := len(suffixes) - 1
	covered := make([]int, n)
	for _, l := range lines {
		end := l.From + int(l.Records)
		if l.From < 0 || l.Records < 1 || end > n {
			r.wrong++
			continue
		}
		if want := suffixes[l.From].Minus(suffixes[end]); l.Digest != want.String() {
			r.wrong++
		}
		again := false
		for p := l.From; p < end; p++ {
			if covered[p]++; covered[p] > 1 {
				r.dupRecords++
				again = true
			}
		}
		if again {
			r.duplicates++
		}
	}
}

// kindOf is the kind of the last fault that affected a task in a pass.
func (r *report) kindOf(pass, task int) string {
	if kind, ok := r.faultedBy[[2]int{pass, task}]; ok {
		return kind
	}
	return "none (timeouts of the slow trainer, lost finishes)"
}

// at returns s[pos], or the zero value past the end of s.
func at[T any](s []T, pos int) T {
	var zero T
	if pos < len(s) {
		return s[pos]
	}
	return zero
}

// verdict fails the run if a promise was broken.
func (r *report) verdict() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.g.group {
		return r.g.verdict(r.wrong)
	}
	var broken []string
	if r.lost > 0 {
		broken = append(broken, fmt.Sprintf("%d records lost", r.lost))
	}
	if r.wrong > 0 {
		broken = append(broken, fmt.Sprintf("%d task consumptions with the wrong records", r.wrong))
	}
	if r.doneTwice > 0 || r.doneNever > 0 {
		broken = append(broken, fmt.Sprintf("tasks done twice in a pass: %d, never: %d", r.doneTwice, r.doneNever))
	}
	if r.passBack {
		broken = append(broken, fmt.Sprintf("the pass went back or did not reach the end: %v", r.passes))
	}
	if len(broken) > 0 {
		return errors.Errorf("promises broken: %s", strings.Join(broken, "; "))
	}
	return nil
}
