package master

import (
	"strings"
	"testing"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/taskqueue"
)

// runPasses has a trainer of s, having finished the task held (of the
// dataset it names), train until it is handed a task of pass until, and
// returns that task, held; the zero Task once the passes end.
func runPasses(t *testing.T, s *Service, held wire.Task, until int) wire.Task {
	t.Helper()
	for {
		task, err := s.GetTask(ctx, held)
		if wire.Is(err, wire.TextAllDone) {
			return wire.Task{}
		}
		if err != nil {
			t.Fatal(err)
		}
		if task.Pass >= until {
			return task
		}
		held = task
	}
}

// TestEndlessDeclarations: what a declaration and the master's passes make
// of a dataset's end, and how a later declaration of it compares.
func TestEndlessDeclarations(t *testing.T) {
	for _, tc := range []struct {
		name    string
		master  taskqueue.Config
		d       wire.Dataset
		endless bool
		later   wire.Dataset // declared again: accepted if its Name is set
		refused string       // else refused with this
	}{
		{"declared without end", taskqueue.Config{Passes: 2}, wire.Dataset{Endless: true}, true,
			wire.Dataset{Endless: true}, ""},
		{"zero: the master's, bounded", taskqueue.Config{Passes: 2}, wire.Dataset{}, false,
			wire.Dataset{Endless: true}, `this call reports "eval": 10 records in tasks of 2, passes without end`},
		{"zero: the master's, without end", taskqueue.Config{Endless: true}, wire.Dataset{}, true,
			wire.Dataset{Endless: true}, ""},
		{"own passes under a master without end", taskqueue.Config{Endless: true}, wire.Dataset{Passes: 3}, false,
			wire.Dataset{}, ""},
		{"without end, declared again with passes", taskqueue.Config{Passes: 2}, wire.Dataset{Endless: true}, true,
			wire.Dataset{Passes: 2}, "passes a round: 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newService(t, Config{Queue: tc.master})
			d := tc.d
			d.Name, d.Records, d.RecordsPerTask = "eval", 10, 2
			if err := s.DeclareDataset(ctx, d); err != nil {
				t.Fatal(err)
			}
			st, err := s.DatasetStatus(ctx, "eval")
			if err != nil || (st.Passes == 0) != tc.endless || st.AllDone {
				t.Fatalf("status %+v, %v; want without end: %v", st, err, tc.endless)
			}
			later := tc.later
			later.Name, later.Records, later.RecordsPerTask = "eval", 10, 2
			err = s.DeclareDataset(ctx, later)
			if (err == nil) != (tc.refused == "") || err != nil && !strings.Contains(err.Error(), tc.refused) {
				t.Fatalf("declared again as %+v: %v, want refused with %q", later, err, tc.refused)
			}
		})
	}
	s, _ := newService(t, Config{})
	err := s.DeclareDataset(ctx, wire.Dataset{Name: "eval", Records: 10, RecordsPerTask: 2, Passes: 2, Endless: true})
	if err == nil || !strings.Contains(err.Error(), `dataset "eval": 2 passes a round, and passes without end: give one or the other`) {
		t.Fatalf("passes and no end: %v", err)
	}
}

// TestEndlessAcrossFailover: a dataset without end runs pass after pass,
// refuses a new round, and a master that takes over its store goes on
// from the stored pass, still without end, whatever its own -passes.
func TestEndlessAcrossFailover(t *testing.T) {
	for _, tc := range []struct {
		name          string
		first, second taskqueue.Config
		declared      wire.Dataset
	}{
		{"the master's -passes 0", taskqueue.Config{Endless: true}, taskqueue.Config{Endless: true}, wire.Dataset{}},
		{"declared, standby of -passes 2", taskqueue.Config{Passes: 2}, taskqueue.Config{Passes: 2}, wire.Dataset{Endless: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			catalog := NewMemoryCatalog(nil)
			d := tc.declared
			d.Name, d.Records, d.RecordsPerTask = "eval", 10, 3
			first, _ := newService(t, Config{Queue: tc.first, Catalog: catalog, Datasets: []wire.Dataset{d}})
			if err := first.Restore(ctx); err != nil {
				t.Fatal(err)
			}
			held := runPasses(t, first, wire.Task{Dataset: "eval"}, 5)
			if held.Pass != 5 || held.Epoch == 0 {
				t.Fatalf("the first master stopped at %+v, want pass 5 and on", held)
			}
			_, err := first.StartRound(ctx, wire.Round{Dataset: "eval", Round: 1})
			if err == nil || wire.Is(err, wire.TextRoundRunning) || !strings.Contains(err.Error(), `dataset "eval" runs passes without end (at pass 5): its round 0 never ends`) {
				t.Fatalf("round 1 of a dataset without end: %v", err)
			}
			if cur, err := first.StartRound(ctx, wire.Round{Dataset: "eval", Round: 0}); err != nil || cur != 0 {
				t.Fatalf("round 0, the current one: %d, %v", cur, err)
			}
			first.Close()

			second, _ := newService(t, Config{Queue: tc.second, Catalog: catalog})
			if err := second.Restore(ctx); err != nil {
				t.Fatal(err)
			}
			st, err := second.DatasetStatus(ctx, "eval")
			if err != nil || st.Pass != 5 || st.Passes != 0 || st.AllDone {
				t.Fatalf("restored status %+v, %v; want pass 5, no end", st, err)
			}
			if held = runPasses(t, second, held, 9); held.Pass != 9 {
				t.Fatalf("the second master stopped at %+v, want pass 9 and on", held)
			}
		})
	}
}
