package client_test

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/trainmaster/master/go/client"
	"github.com/trainmaster/master/go/client/clienttest"
	"github.com/trainmaster/master/go/recordio"
	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/master"
)

// evalSet is the index-range dataset of the tests: 10 tasks of 1000.
var evalSet = wire.Dataset{Name: "eval", Records: 10_000, RecordsPerTask: 1000}

// evalConfig is a fast Config for a trainer of the dataset eval.
func evalConfig() client.Config {
	cfg := fast
	cfg.Dataset = "eval"
	return cfg
}

// testContext bounds a test: a client waiting for what never comes ends
// its loop with an error instead of hanging.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// TestRangeDatasetBesideTrain: a client of the dataset eval, an index-range
// dataset it declared, gets every index once, in each task's order, while
// another client trains the dataset train, whose records all arrive.
func TestRangeDatasetBesideTrain(t *testing.T) {
	for _, seed := range []uint64{0, 7} {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			ctx := testContext(t)
			j := startJob(t, master.Config{ChunksPerTask: 2, ShuffleSeed: seed})
			paths, _ := clienttest.WriteFiles(t, t.TempDir(), small.files, small.records, small.perChunk)
			train := j.client(t, fast)
			if err := train.ReportDataset(ctx, paths); err != nil {
				t.Fatal(err)
			}
			ev := j.client(t, evalConfig())
			if err := ev.Declare(ctx, evalSet); err != nil {
				t.Fatal(err)
			}
			trained := make(chan client.Digest, 1)
			go func() {
				var d client.Digest
				for rec, err := range train.Records(ctx) {
					if err != nil {
						t.Errorf("train: %v", err)
						continue // the loop stops by itself
					}
					d.Add(rec.Data)
				}
				trained <- d
			}()
			checkIndexes(t, collect(t, ctx, ev, nil), evalSet, seed, 0)
			want, err := client.DigestRecords(recordio.ScanFiles(paths...))
			if err != nil {
				t.Fatal(err)
			}
			if got := <-trained; got != want {
				t.Errorf("train loop read %+v, the files hold %+v", got, want)
			}
			for _, tc := range []struct {
				c       *client.Client
				name    string
				records int64
			}{{ev, "eval", evalSet.Records}, {train, "train", want.Records}} {
				st, err := tc.c.DatasetStatus(ctx)
				if err != nil || st.Dataset != tc.name || !st.AllDone || st.Records != tc.records ||
					!slices.Equal(st.Datasets, []string{"eval", "train"}) {
					t.Errorf("status of %s: %+v, %v", tc.name, st, err)
				}
			}
		})
	}
}

// TestRangeDatasetRounds: a loop ends with its round; once the next round
// is started it yields every index again, in that round's passes. A round
// that runs is not started again, and the next is refused meanwhile.
func TestRangeDatasetRounds(t *testing.T) {
	ctx := testContext(t)
	j := startJob(t, master.Config{})
	set := wire.Dataset{Name: "eval", Records: 2000, RecordsPerTask: 300, Passes: 2} // the last task has 200
	ev := j.client(t, evalConfig())
	if st, err := ev.DatasetStatus(ctx); err != nil || st.Dataset != "eval" || st.DatasetReported {
		t.Fatalf("status before the declaration: %+v, %v", st, err)
	}
	if err := ev.Declare(ctx, set); err != nil {
		t.Fatal(err)
	}
	checkIndexes(t, collect(t, ctx, ev, nil), set, 0, 0, 1)
	checkStatus(t, ev, wire.Status{Dataset: "eval", Round: 0, Pass: 2, Passes: 2, AllDone: true})
	if recs := collect(t, ctx, ev, nil); len(recs) != 0 {
		t.Fatalf("a loop after the round yielded %d records", len(recs))
	}
	if round, err := ev.StartRound(ctx, 1); err != nil || round != 1 {
		t.Fatalf("StartRound(1): %d, %v", round, err)
	}
	during := func() {
		if round, err := ev.StartRound(ctx, 1); err != nil || round != 1 {
			t.Errorf("StartRound(1) again while it runs: %d, %v", round, err)
		}
		if round, err := ev.StartRound(ctx, 2); !wire.Is(err, wire.TextRoundRunning) {
			t.Errorf("StartRound(2) while round 1 runs: %d, %v; want %q", round, err, wire.TextRoundRunning)
		}
	}
	checkIndexes(t, collect(t, ctx, ev, map[int]func(){0: during, 2500: during}), set, 0, 2, 3)
	checkStatus(t, ev, wire.Status{Dataset: "eval", Round: 1, Pass: 4, Passes: 4, AllDone: true})
}

// checkStatus checks the round and pass figures of c's dataset.
func checkStatus(t *testing.T, c *client.Client, want wire.Status) {
	t.Helper()
	st, err := c.DatasetStatus(context.Background())
	got := wire.Status{Dataset: st.Dataset, Round: st.Round, Pass: st.Pass, Passes: st.Passes, AllDone: st.AllDone}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("status %+v, %v; want %+v", st, err, want)
	}
}

// TestRangeDatasetSurvivesARestart: a master restarted in the middle of a
// pass restores the dataset eval from its store: nobody declares it again,
// and the loop goes on to yield every index once.
func TestRangeDatasetSurvivesARestart(t *testing.T) {
	ctx := testContext(t)
	j := startJob(t, master.Config{})
	paths, _ := clienttest.WriteFiles(t, t.TempDir(), small.files, small.records, small.perChunk)
	if err := j.client(t, fast).ReportDataset(ctx, paths); err != nil {
		t.Fatal(err)
	}
	ev := j.client(t, evalConfig())
	if err := ev.Declare(ctx, evalSet); err != nil {
		t.Fatal(err)
	}
	var restored wire.Status
	restart := func() { // in task 3, once tasks 0 and 1 are reported finished
		if n := j.proxy.calls.Load(); n != 1 {
			t.Errorf("%d declarations counted before the restart, want 1: the count counts nothing", n)
		}
		j.restart(t, false)
		var err error
		if restored, err = j.svc.DatasetStatus(ctx, "eval"); err != nil {
			t.Fatal(err)
		}
	}
	checkIndexes(t, collect(t, ctx, ev, map[int]func(){3500: restart}), evalSet, 0, 0)
	if !restored.DatasetReported || restored.AllDone || restored.RecordsDone < 2000 {
		t.Errorf("the new master, before any call, shows eval as %+v: not restored mid-pass", restored)
	}
	if n := j.proxy.calls.Load(); n != 0 {
		t.Errorf("eval declared %d times to the new master", n)
	}
	if st, err := j.svc.DatasetStatus(ctx, "eval"); err != nil || !st.AllDone {
		t.Errorf("the new master ends with eval %+v, %v", st, err)
	}
}

// TestRangeTaskResumesAtItsProgress: a range task left in the middle, its
// position reported, and handed to another trainer once its first one is
// gone, starts there: together they yield every index once.
func TestRangeTaskResumesAtItsProgress(t *testing.T) {
	for _, seed := range []uint64{0, 5} {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			ctx := testContext(t)
			j := startJob(t, master.Config{ShuffleSeed: seed, TrainerGrace: 50 * time.Millisecond})
			set := wire.Dataset{Name: "eval", Records: 4000, RecordsPerTask: 1000}
			cfg := evalConfig()
			cfg.Prefetch = -1                // it holds the task it leaves only
			cfg.ProgressInterval = time.Hour // it reports its position once, as the loop stops
			cfg.Name = "first"
			first := j.client(t, cfg)
			if err := first.Declare(ctx, set); err != nil {
				t.Fatal(err)
			}
			const left = 250
			var before []client.Record
			for rec, err := range first.Records(ctx) {
				if err != nil {
					t.Fatal(err)
				}
				if before = append(before, rec); len(before) == left {
					break
				}
			}
			first.Close() // gone: the master hands its task again after TrainerGrace
			cfg.Name = "second"
			after := collect(t, ctx, j.client(t, cfg), nil)
			i := slices.IndexFunc(after, func(r client.Record) bool { return r.Task == before[0].Task })
			if i < 0 {
				t.Fatalf("task %d left in the middle never handed again", before[0].Task)
			}
			if after[i].Position != left {
				t.Fatalf("task %d handed again from %+v, want position %d", before[0].Task, after[i], left)
			}
			checkIndexes(t, append(before, after...), set, seed, 0)
		})
	}
}

// collect runs a Records loop of c over a range dataset (records without
// Data, so they need no copy) to its end and returns the records yielded.
// Before the body takes record n it calls hooks[n].
func collect(t *testing.T, ctx context.Context, c *client.Client, hooks map[int]func()) []client.Record {
	t.Helper()
	var recs []client.Record
	var errs []error
	for rec, err := range c.Records(ctx) {
		if err != nil {
			errs = append(errs, err)
			continue // the loop must stop by itself
		}
		if hook := hooks[len(recs)]; hook != nil {
			hook()
		}
		recs = append(recs, rec)
	}
	if len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	return recs
}

// checkIndexes checks that recs hold every index of the range dataset set
// once in each of passes: each task's whole, in its order (Start+i, or
// Start+wire.Shuffle(n, seed)[i] with the seed the master gives the task in
// the pass of a job whose seed is jobSeed), Last on its last record only,
// no Data.
func checkIndexes(t *testing.T, recs []client.Record, set wire.Dataset, jobSeed uint64, passes ...int) {
	t.Helper()
	yielded := map[[2]int][]client.Record{} // by pass and task
	for _, r := range recs {
		if r.Data != nil {
			t.Fatalf("record %+v of a range task has data", r)
		}
		yielded[[2]int{r.Pass, r.Task}] = append(yielded[[2]int{r.Pass, r.Task}], r)
	}
	shuffled := 0
	for _, pass := range passes {
		for task := 0; int64(task)*set.RecordsPerTask < set.Records; task++ {
			start := int64(task) * set.RecordsPerTask
			want := rangeOrder(start, min(set.RecordsPerTask, set.Records-start), jobSeed, pass, task)
			got := yielded[[2]int{pass, task}]
			delete(yielded, [2]int{pass, task})
			if len(got) != len(want) {
				t.Fatalf("pass %d task %d: %d records yielded, it has %d", pass, task, len(got), len(want))
			}
			for i, r := range got {
				if r.Position != i || r.Index != want[i] || r.Last != (i == len(want)-1) {
					t.Fatalf("pass %d task %d record %d: %+v, want index %d", pass, task, i, r, want[i])
				}
			}
			if !slices.IsSorted(want) {
				shuffled++
			}
		}
	}
	if len(yielded) > 0 {
		t.Errorf("records of other passes or tasks (pass, task): %v", slices.Collect(maps.Keys(yielded)))
	}
	if jobSeed != 0 && shuffled == 0 {
		t.Error("no task yielded out of index order: the test tests no shuffle")
	}
}

// rangeOrder returns the indexes of the range task [start, start+n) in the
// order to train them in pass pass of a job whose seed is jobSeed.
func rangeOrder(start, n int64, jobSeed uint64, pass, task int) []int64 {
	order := make([]int64, n)
	for i := range order {
		order[i] = start + int64(i)
	}
	if jobSeed == 0 {
		return order
	}
	for i, off := range wire.Shuffle(int(n), wire.TaskSeed(jobSeed, pass, task)) {
		order[i] = start + int64(off)
	}
	return order
}

// TestDeclaredAgainToAMasterThatLostIt: a client that declared eval
// declares it again when a new master, which lost it, answers "dataset not
// reported", and trains it there.
func TestDeclaredAgainToAMasterThatLostIt(t *testing.T) {
	ctx := testContext(t)
	j := startJob(t, master.Config{})
	ev := j.client(t, evalConfig())
	if err := ev.Declare(ctx, evalSet); err != nil {
		t.Fatal(err)
	}
	recs := collect(t, ctx, ev, map[int]func(){3500: func() { j.restart(t, true) }})
	if n := j.proxy.calls.Load(); n != 1 {
		t.Errorf("eval declared %d times to the new master, want once", n)
	}
	if st, err := j.svc.DatasetStatus(ctx, "eval"); err != nil || !st.AllDone {
		t.Errorf("the new master ends with eval %+v, %v", st, err)
	}
	// The new master's pass is whole; the tasks of the old one are trained
	// again.
	seen := make([]bool, evalSet.Records)
	for _, r := range recs {
		seen[r.Index] = true
	}
	if i := slices.Index(seen, false); i >= 0 {
		t.Errorf("index %d never yielded", i)
	}
}
