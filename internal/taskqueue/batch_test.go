package taskqueue

import (
	"math/rand"
	"slices"
	"testing"
)

// TestABatchIsChangesMergedInOrder: a Batch of random changes holds each
// task's last entry, in the order tasks were first touched, the last
// change's pass and the generation of the last change that moved the pass;
// the same as merging the changes one by one into a plain Change.
func TestABatchIsChangesMergedInOrder(t *testing.T) {
	for seed := range int64(100) {
		rng := rand.New(rand.NewSource(seed))
		var b Batch
		var merged Change
		last := map[int]Entry{}
		var order []int
		tasks := 5 + rng.Intn(60) // a batch of a few tasks scans them, of many indexes them (scanRecords)
		for range 1 + rng.Intn(50) {
			ch := Change{Pass: rng.Intn(3), PassChanged: rng.Intn(5) == 0, Gen: Generation{Gen: rng.Intn(4)}}
			for range rng.Intn(6) {
				i := rng.Intn(tasks)
				e := Entry{Epoch: rng.Intn(100)}
				ch.Records = append(ch.Records, Record{Index: i, Entry: e})
				if _, ok := last[i]; !ok {
					order = append(order, i)
				}
				last[i] = e
			}
			b.Add(ch)
			merged = merged.Merge(ch)
		}
		var indexes []int
		for _, r := range b.Records {
			indexes = append(indexes, r.Index)
			if r.Entry != last[r.Index] {
				t.Fatalf("seed %d: task %d holds %+v, want its last entry %+v", seed, r.Index, r.Entry, last[r.Index])
			}
			if got, ok := b.Lookup(r.Index); !ok || got != r {
				t.Fatalf("seed %d: Lookup(%d) = %+v, %v", seed, r.Index, got, ok)
			}
		}
		if !slices.Equal(indexes, order) {
			t.Fatalf("seed %d: tasks in the order %v, want %v", seed, indexes, order)
		}
		if b.Pass != merged.Pass || b.PassChanged != merged.PassChanged || b.Gen != merged.Gen || len(b.Records) != len(merged.Records) {
			t.Fatalf("seed %d: batch %+v, merged %+v", seed, b.Change, merged)
		}
		if _, ok := b.Lookup(99); ok {
			t.Fatalf("seed %d: a task never touched is held", seed)
		}
	}
}
