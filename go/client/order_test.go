package client_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/trainmaster/master/go/client/clienttest"
	"github.com/trainmaster/master/go/wire"
)

// TestRecordsInTheTasksOrder: a task without a seed yields its records in
// file order; one with a seed in the order wire.Shuffle draws from it,
// which differs from the file's and from pass to pass.
func TestRecordsInTheTasksOrder(t *testing.T) {
	const passes = 2
	for _, seed := range []uint64{0, 11} {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			h := setup(t, clienttest.Options{Passes: passes, ChunksPerTask: 3, Seed: seed}, small, fast)
			recs, errs := loop{}.run(t, context.Background(), h.m, h.c)
			if len(errs) > 0 {
				t.Fatalf("errors: %v", errs)
			}
			files := taskRecords(t, h.m)
			yielded := map[[2]int][]string{}
			for _, r := range recs {
				key := [2]int{r.pass, r.task}
				yielded[key] = append(yielded[key], r.data)
				if r.last != (len(yielded[key]) == len(files[r.task])) {
					t.Fatalf("pass %d task %d: record %d has Last %v", r.pass, r.task, len(yielded[key])-1, r.last)
				}
			}
			shuffled := 0
			for p := range passes {
				for task, inFile := range files {
					want := inFile
					if seed != 0 {
						want = nil
						for _, i := range wire.Shuffle(len(inFile), wire.TaskSeed(seed, p, task)) {
							want = append(want, inFile[i])
						}
					}
					got := yielded[[2]int{p, task}]
					if !slices.Equal(got, want) {
						t.Fatalf("pass %d task %d yielded %q, want %q", p, task, got, want)
					}
					if !slices.Equal(got, inFile) {
						shuffled++
					}
				}
			}
			if seed != 0 && shuffled < passes*(len(files)-1) || seed == 0 && shuffled != 0 {
				t.Errorf("%d tasks of %d passes of %d yielded out of file order", shuffled, passes, len(files))
			}
			if seed != 0 && slices.Equal(yielded[[2]int{0, 0}], yielded[[2]int{1, 0}]) {
				t.Errorf("task 0 yielded in the same order in both passes: %q", yielded[[2]int{0, 0}])
			}
		})
	}
}
