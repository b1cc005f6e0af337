package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

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

	consumed map[[2]int][]taskLine // {pass, task} -> each complete consumption
	doneSet  map[[2]int]int        // {pass, task} -> transitions to done seen in etcd
	passes   []int                 // values of the pass key, in order

	lost, wrong, duplicates, dupRecords, doneTwice, doneNever int
	passBack                                                  bool
	records                                                   int64
}

type taskLine struct {
	Pass    int    `json:"pass"`
	Task    *int   `json:"task"`
	Records int64  `json:"records"`
	Digest  string `json:"digest"`
}

func newReport() *report {
	return &report{faults: map[string]int{}, consumed: map[[2]int][]taskLine{}, doneSet: map[[2]int]int{}}
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
	case key == "/task_queues/pass" && ev.Type == clientv3.EventTypePut:
		var p struct{ Pass int }
		json.Unmarshal(ev.Kv.Value, &p)
		r.passes = append(r.passes, p.Pass)
	case strings.HasPrefix(key, "/task_queues/tasks/") && ev.Type == clientv3.EventTypePut:
		var e, prev struct {
			Pass  int
			Queue string
		}
		json.Unmarshal(ev.Kv.Value, &e)
		if ev.PrevKv != nil {
			json.Unmarshal(ev.PrevKv.Value, &prev)
		}
		if e.Queue == "done" && !(prev.Queue == "done" && prev.Pass == e.Pass) {
			var task int
			fmt.Sscanf(strings.TrimPrefix(key, "/task_queues/tasks/"), "%d", &task)
			r.doneSet[[2]int{e.Pass, task}]++
		}
	}
}

// verify compares what was consumed and committed with the dataset.
func (r *report) verify(pattern string, o options) error {
	ds, err := dataset.Build([]string{pattern}, o.chunkTask)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for task := range ds.NumTasks() {
		var refs []recordio.ChunkRef
		for _, b := range ds.Blocks(task) {
			refs = append(refs, recordio.ChunkRef{Path: b.Path, Chunk: b.Idx, Offset: b.Offset})
		}
		want, err := client.DigestRecords(recordio.NewScanner(refs), nil)
		if err != nil {
			return err
		}
		for pass := range o.passes {
			lines := r.consumed[[2]int{pass, task}]
			if len(lines) == 0 {
				r.lost += int(want.Records)
			}
			for i, l := range lines {
				if l.Records != want.Records || l.Digest != want.String() {
					r.wrong++
				}
				if i > 0 {
					r.duplicates++
					r.dupRecords += int(l.Records)
				}
			}
			switch n := r.doneSet[[2]int{pass, task}]; {
			case n == 0:
				r.doneNever++
			case n > 1:
				r.doneTwice++
			}
		}
	}
	r.records = ds.NumRecords() * int64(o.passes)
	r.passBack = !slices.IsSorted(r.passes) || len(r.passes) == 0 || r.passes[len(r.passes)-1] != o.passes
	return nil
}

// verdict fails the run if a promise was broken.
func (r *report) verdict() error {
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
		return fmt.Errorf("promises broken: %s", strings.Join(broken, "; "))
	}
	return nil
}

func (r *report) print(w io.Writer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(w, "\n%-40s %s\n", "fault", "injected")
	kinds := make([]string, 0, len(r.faults))
	for k := range r.faults {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	for _, k := range kinds {
		fmt.Fprintf(w, "%-40s %d\n", k, r.faults[k])
	}
	fmt.Fprintf(w, "\n%-40s %v\n", "training time", r.duration.Round(time.Millisecond))
	if len(r.failovers) > 0 {
		f := slices.Clone(r.failovers)
		slices.Sort(f)
		fmt.Fprintf(w, "%-40s %d: min %v, median %v, max %v\n", "failovers (fault to new leader serving)", len(f),
			f[0].Round(time.Millisecond), f[len(f)/2].Round(time.Millisecond), f[len(f)-1].Round(time.Millisecond))
	}
	fmt.Fprintf(w, "%-40s %d\n", "records to train (all passes)", r.records)
	fmt.Fprintf(w, "%-40s %d\n", "lost records", r.lost)
	fmt.Fprintf(w, "%-40s %d tasks, %d records\n", "duplicates (consumed again after a fault)", r.duplicates, r.dupRecords)
	fmt.Fprintf(w, "%-40s %d\n", "task consumptions with wrong records", r.wrong)
	fmt.Fprintf(w, "%-40s twice %d, never %d\n", "tasks Done in etcd per pass, not once", r.doneTwice, r.doneNever)
	fmt.Fprintf(w, "%-40s %v\n", "pass values in etcd, in order", compact(r.passes))
	fmt.Fprintf(w, "%-40s %d\n", "stale fenced writes rejected", r.rejected)
	for _, n := range r.notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
}

// compact shows a sequence without its repeats.
func compact(xs []int) []int { return slices.Compact(slices.Clone(xs)) }
