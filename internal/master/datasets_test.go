package master

import (
	"strings"
	"testing"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/taskqueue"
)

// TestDeclarationsRefused: what a trainer's declaration may not do, each
// refused with the dataset named, and nothing created.
func TestDeclarationsRefused(t *testing.T) {
	dir := t.TempDir()
	pattern := writeDataset(t, dir, 2, 4)
	s, _ := newService(t, Config{MaxDatasets: 3, Datasets: []wire.Dataset{{Name: "eval", Records: 100, RecordsPerTask: 10}}})
	if err := s.DeclareDataset(ctx, wire.Dataset{Name: "extra", Records: 10, RecordsPerTask: 10}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		d    wire.Dataset
		want []string
	}{
		{"bad name", wire.Dataset{Name: "Eval!", Records: 10, RecordsPerTask: 1}, []string{`dataset name "Eval!"`}},
		{"reserved name", wire.Dataset{Name: "tasks", Records: 10, RecordsPerTask: 1}, []string{`"tasks" is reserved`}},
		{"long name", wire.Dataset{Name: strings.Repeat("a", 65), Records: 10, RecordsPerTask: 1}, []string{"65 bytes (at most 64)"}},
		{"files and records", wire.Dataset{Name: "both", Patterns: []string{pattern}, Records: 10, RecordsPerTask: 1}, []string{`"both" gives both files and a number`}},
		{"neither", wire.Dataset{Name: "none"}, []string{`"none" gives neither`}},
		{"too many tasks", wire.Dataset{Name: "huge", Records: 1 << 40, RecordsPerTask: 1}, []string{"more than the 1048576 an index-range dataset may have"}},
		{"records per task", wire.Dataset{Name: "zero", Records: 10, RecordsPerTask: 0}, []string{"tasks of 0 records"}},
		{"disagrees with the declared", wire.Dataset{Name: "eval", Records: 200, RecordsPerTask: 10},
			[]string{`serves the dataset "eval": 100 records in tasks of 10 it declares`, `this call reports "eval": 200 records in tasks of 10`}},
		{"disagrees with the reported", wire.Dataset{Name: "extra", Records: 10, RecordsPerTask: 5},
			[]string{`already reported as "extra": 10 records in tasks of 10`, `this call reports "extra": 10 records in tasks of 5`}},
		{"over the limit", wire.Dataset{Name: "fourth", Records: 10, RecordsPerTask: 1}, []string{"holds 3 datasets", `"fourth" is refused`, "-max-datasets"}},
	} {
		err := s.DeclareDataset(ctx, tc.d)
		for _, want := range tc.want {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %v; want an error containing %q", tc.name, err, want)
			}
		}
	}
	st, err := s.Status(ctx)
	if err != nil || strings.Join(st.Datasets, " ") != "eval extra train" {
		t.Fatalf("datasets %q, %v; want eval, extra and train only", st.Datasets, err)
	}
	if _, err := s.GetTask(ctx, wire.Task{Dataset: "nothing"}); !wire.Is(err, wire.TextNoDataset) || !strings.Contains(err.Error(), `"nothing"`) {
		t.Fatalf("GetTask of a dataset the job lacks: %v", err)
	}
}

// TestTwoDatasetsApart: tasks, passes and rounds of two datasets do not mix;
// train's replies keep today's shape (no Dataset); a round runs again.
func TestTwoDatasetsApart(t *testing.T) {
	dir := t.TempDir()
	pattern := writeDataset(t, dir, 2, 4) // 8 chunks: 4 tasks of 2
	s, _ := newService(t, Config{ChunksPerTask: 2, Queue: taskqueue.Config{Passes: 2}})
	if err := s.ReportDataset(ctx, []string{pattern}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeclareDataset(ctx, wire.Dataset{Name: "eval", Records: 25, RecordsPerTask: 10, Passes: 1}); err != nil {
		t.Fatal(err)
	}
	covered := map[int64]int{}
	finished := wire.Task{Dataset: "eval"}
	for {
		task, err := s.GetTask(ctx, finished)
		if wire.Is(err, wire.TextAllDone) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if task.Dataset != "eval" || len(task.Blocks) != 0 {
			t.Fatalf("eval task %+v", task)
		}
		for i := task.Start; i < task.End; i++ {
			covered[i]++
		}
		finished = task
	}
	if len(covered) != 25 {
		t.Fatalf("eval's round covered %d of 25 records", len(covered))
	}
	task, err := s.GetTask(ctx, wire.Task{})
	if err != nil || task.Dataset != "" || len(task.Blocks) != 2 || task.End != 0 {
		t.Fatalf("train's task %+v, %v: want 2 blocks, no dataset named", task, err)
	}
	if st := status(t, s); st.Pass != 0 || st.Pending != 1 || st.Dataset != wire.DefaultDataset {
		t.Fatalf("train after eval's round: %+v", st)
	}
	if cur, err := s.StartRound(ctx, wire.Round{Dataset: "eval", Round: 1}); err != nil || cur != 1 {
		t.Fatalf("round 1: %d, %v", cur, err)
	}
	st, err := s.DatasetStatus(ctx, "eval")
	if err != nil || st.Round != 1 || st.Pass != 1 || st.Todo != 3 || st.AllDone {
		t.Fatalf("eval at round 1: %+v, %v", st, err)
	}
	if _, err := s.StartRound(ctx, wire.Round{Dataset: "eval", Round: 3}); err == nil || !strings.Contains(err.Error(), "round 3 cannot start before round 2") {
		t.Fatalf("round 3 at round 1: %v", err)
	}
}
