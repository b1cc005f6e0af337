package etcdstore

import (
	"fmt"
	"slices"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/dataset"
	"github.com/trainmaster/master/internal/etcdembed/etcdtest"
	"github.com/trainmaster/master/internal/master"
)

// TestCatalogReadsTheLayoutOfBeforeNamedDatasets: a job stored before
// named datasets (its keys right under task_queues/) is the dataset train,
// kept where it is; a named dataset stored beside it gets its own prefix,
// and both load.
func TestCatalogReadsTheLayoutOfBeforeNamedDatasets(t *testing.T) {
	_, cli := etcdtest.Start(t)
	old, l := lead(t, cli, "/job")
	if err := old.SaveDataset(ctx, syntheticDataset(t, 100, 10)); err != nil {
		t.Fatal(err)
	}
	c := NewCatalog(Config{Client: cli, Namespace: "/job", Fence: l.Fence()})
	if names, err := c.Names(ctx); err != nil || !slices.Equal(names, []string{wire.DefaultDataset}) {
		t.Fatalf("names %q, %v; want [train]", names, err)
	}
	train, err := c.store(ctx, wire.DefaultDataset)
	if err != nil || train.keys.prefix() != "/job/task_queues/" {
		t.Fatalf("train's store at %q, %v; want the old layout's /job/task_queues/", train.keys.prefix(), err)
	}
	eval, err := c.store(ctx, "eval")
	if err != nil || eval.keys.prefix() != "/job/task_queues/eval/" {
		t.Fatalf("eval's store at %q, %v", eval.keys.prefix(), err)
	}
	rng, err := dataset.NewRange(1000, 100)
	if err != nil {
		t.Fatal(err)
	}
	rng.Name, rng.Passes = "eval", 2
	if err := eval.SaveDataset(ctx, rng); err != nil {
		t.Fatal(err)
	}
	if names, err := c.Names(ctx); err != nil || !slices.Equal(names, []string{"eval", wire.DefaultDataset}) {
		t.Fatalf("names %q, %v; want [eval train]", names, err)
	}
	for name, tasks := range map[string]int{wire.DefaultDataset: 10, "eval": 10} {
		st, err := c.Store(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		snap, err := st.Load(ctx)
		if err != nil || snap.Dataset == nil || snap.Dataset.NumTasks() != tasks {
			t.Fatalf("%s: loaded %+v, %v", name, snap, err)
		}
	}
}

// TestCatalogOfANewJob: without the old layout every dataset, train
// included, lies under task_queues/<name>/, and Names finds each with one
// read however many keys it has.
func TestCatalogOfANewJob(t *testing.T) {
	_, cli := etcdtest.Start(t)
	_, l := lead(t, cli, "/new")
	c := NewCatalog(Config{Client: cli, Namespace: "/new", Fence: l.Fence()})
	want := []string{"eval", "eval.b", "eval2", "train"}
	for _, name := range want {
		st, err := c.store(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if st.keys.prefix() != "/new/task_queues/"+name+"/" {
			t.Fatalf("%s stored under %s", name, st.keys.prefix())
		}
		if err := st.SaveDataset(ctx, syntheticDataset(t, 100, 10)); err != nil {
			t.Fatal(err)
		}
	}
	names, err := c.Names(ctx)
	if err != nil || !slices.Equal(names, want) {
		t.Fatalf("names %q, %v; want %q", names, err, want)
	}
	if _, err := c.Store(ctx, "tasks"); err == nil {
		t.Fatal("a dataset called tasks, a key of the old layout, was given a store")
	}
}

// TestRoundsAreStored: the round and the passes of a round survive a
// restore, and a new round starts where the last one ended.
func TestRoundsAreStored(t *testing.T) {
	_, cli := etcdtest.Start(t)
	_, l := lead(t, cli, "/rounds")
	cfg := master.Config{Catalog: NewCatalog(Config{Client: cli, Namespace: "/rounds", Fence: l.Fence()}), Log: quiet()}
	svc, err := master.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	eval := wire.Dataset{Name: "eval", Records: 30, RecordsPerTask: 10, Passes: 2}
	if err := svc.DeclareDataset(ctx, eval); err != nil {
		t.Fatal(err)
	}
	drain := func(s *master.Service) {
		t.Helper()
		finished := wire.Task{Dataset: "eval"}
		for {
			task, err := s.GetTask(ctx, finished)
			if wire.Is(err, wire.TextAllDone) {
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if task.Dataset != "eval" || task.End-task.Start != 10 {
				t.Fatalf("task %+v: want 10 records of eval", task)
			}
			finished = task
		}
	}
	drain(svc)
	if _, err := svc.StartRound(ctx, wire.Round{Dataset: "eval", Round: 1}); err != nil {
		t.Fatal(err)
	}
	svc.Close()
	again, err := master.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if err := again.Restore(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := again.DatasetStatus(ctx, "eval")
	if err != nil || st.Round != 1 || st.Pass != 2 || st.Passes != 4 || st.AllDone {
		t.Fatalf("restored %+v, %v; want round 1 at pass 2 of 4", st, err)
	}
	if _, err := again.StartRound(ctx, wire.Round{Dataset: "eval", Round: 2}); !wire.Is(err, wire.TextRoundRunning) {
		t.Fatalf("round 2 while round 1 runs: %v", err)
	}
	drain(again)
	if cur, err := again.StartRound(ctx, wire.Round{Dataset: "eval", Round: 1}); err != nil || cur != 1 {
		t.Fatalf("asking again for round 1: %d, %v", cur, err)
	}
}

// TestWritesPerDispatchDependOnNeitherSizeNorDatasets: a dispatch writes
// the same bytes with one small dataset as with eight, one of them an
// index range of a million tasks.
func TestWritesPerDispatchDependOnNeitherSizeNorDatasets(t *testing.T) {
	_, cli := etcdtest.Start(t)
	_, l := lead(t, cli, "/w")
	catalog := NewCatalog(Config{Client: cli, Namespace: "/w", Fence: l.Fence()})
	svc, err := master.New(master.Config{Catalog: catalog, Log: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	perDispatch := func(name string) int64 {
		t.Helper()
		before := catalog.Stats().BytesWritten.Load()
		const dispatches = 100
		for range dispatches {
			if _, err := svc.GetTask(ctx, wire.Task{Dataset: name, Trainer: "t"}); err != nil {
				t.Fatal(err)
			}
		}
		return (catalog.Stats().BytesWritten.Load() - before) / dispatches
	}
	declare := func(d wire.Dataset) {
		t.Helper()
		if err := svc.DeclareDataset(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	declare(wire.Dataset{Name: "set0", Records: 10000, RecordsPerTask: 10})
	one := perDispatch("set0")
	for i := 1; i < 7; i++ {
		declare(wire.Dataset{Name: fmt.Sprintf("set%d", i), Records: 10000, RecordsPerTask: 10})
	}
	declare(wire.Dataset{Name: "big0", Records: 10_000_000, RecordsPerTask: 10})
	eight := perDispatch("set0")
	big := perDispatch("big0")
	t.Logf("bytes written per dispatch: %d with one dataset of 1,000 tasks; with eight datasets: %d, and %d in one of 1,000,000 tasks", one, eight, big)
	if eight > one+8 || big > one+8 {
		t.Fatalf("a dispatch writes %d bytes with one dataset, %d with eight, %d in the large one", one, eight, big)
	}
}

func quiet() *logrus.Logger {
	log := logrus.New()
	log.SetLevel(logrus.WarnLevel)
	return log
}
