package master

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/taskqueue"
)

// TestShuffleSeedIsTheStoredOne: a master accepts a dataset with its seed
// and hands out a few tasks; a second master on the same store, with the
// same seed, another or none, continues: every pass is handed out in the
// order drawn from the stored seed (task order without one), every task
// carries the seed of its records, and a master whose seed is not the
// stored one says so, naming both.
func TestShuffleSeedIsTheStoredOne(t *testing.T) {
	const tasks, passes, before = 12, 2, 5
	pattern := writeDataset(t, t.TempDir(), 1, tasks)
	for _, tc := range []struct{ stored, second uint64 }{{7, 7}, {7, 9}, {7, 0}, {0, 5}, {0, 0}} {
		t.Run(fmt.Sprintf("stored %d then %d", tc.stored, tc.second), func(t *testing.T) {
			store := NewMemoryStore()
			cfg := Config{ChunksPerTask: 1, Queue: taskqueue.Config{Passes: passes}, Store: store}
			cfg.ShuffleSeed = tc.stored
			first, _ := newService(t, cfg)
			if err := first.ReportDataset(ctx, []string{pattern}); err != nil {
				t.Fatal(err)
			}
			var got [passes][]int
			var held wire.Task
			take := func(s *Service) bool {
				t.Helper()
				next, err := s.GetTask(ctx, held)
				if wire.Is(err, wire.TextAllDone) {
					return false
				}
				if err != nil {
					t.Fatal(err)
				}
				want := uint64(0)
				if tc.stored != 0 {
					want = wire.TaskSeed(tc.stored, next.Pass, next.Index)
				}
				if next.Seed != want {
					t.Fatalf("pass %d task %d has seed %d, want %d", next.Pass, next.Index, next.Seed, want)
				}
				got[next.Pass] = append(got[next.Pass], next.Index)
				held = next
				return true
			}
			for range before {
				take(first)
			}
			first.Close()

			log, hook := logtest.NewNullLogger()
			cfg.ShuffleSeed, cfg.Log = tc.second, log
			second, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(second.Close)
			if err := second.Restore(ctx); err != nil {
				t.Fatal(err)
			}
			for take(second) {
			}

			for p := range passes {
				want := make([]int, tasks)
				for i := range want {
					want[i] = i
				}
				if tc.stored != 0 {
					want = wire.Shuffle(tasks, wire.TaskSeed(tc.stored, p, -1)) // task -1: the pass's order (doc/protocol.md)
				}
				if !slices.Equal(got[p], want) {
					t.Errorf("pass %d handed out %v, want %v", p, got[p], want)
				}
			}
			var warned []string
			for _, e := range hook.AllEntries() {
				if e.Level == logrus.WarnLevel && strings.Contains(e.Message, "shuffle seed") {
					warned = append(warned, e.Message)
				}
			}
			if differs := tc.stored != tc.second; differs != (len(warned) == 1) ||
				differs && !strings.Contains(warned[0], fmt.Sprintf("stored with shuffle seed %d and this master has -shuffle-seed %d", tc.stored, tc.second)) {
				t.Errorf("warnings about the seed: %q", warned)
			}
		})
	}
}
