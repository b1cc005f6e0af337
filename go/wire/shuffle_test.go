package wire

import (
	"math"
	"slices"
	"testing"
)

// TestShuffleVectors pins the algorithm of the contract: python/tests
// checks the same vectors against trainmaster.shuffle, so a change on
// either side fails both.
func TestShuffleVectors(t *testing.T) {
	for _, tc := range []struct {
		n    int
		seed uint64
		want []int
	}{
		{10, 42, []int{0, 9, 5, 8, 6, 4, 7, 2, 1, 3}},
		{12, math.MaxUint64, []int{3, 2, 4, 11, 7, 9, 5, 10, 0, 1, 6, 8}},
		{1, 42, []int{0}},
		{0, 42, []int{}},
		{-3, 42, []int{}},
	} {
		if got := Shuffle(tc.n, tc.seed); !slices.Equal(got, tc.want) {
			t.Errorf("Shuffle(%d, %d) = %v, want %v", tc.n, tc.seed, got, tc.want)
		}
	}
}

func TestShuffleIsADeterministicPermutation(t *testing.T) {
	for _, n := range []int{2, 3, 10, 1000} {
		for _, seed := range []uint64{1, 42, math.MaxUint64} {
			p := Shuffle(n, seed)
			if !isPermutation(p, n) {
				t.Fatalf("Shuffle(%d, %d) = %v: not a permutation of 0..%d", n, seed, p, n-1)
			}
			if !slices.Equal(Shuffle(n, seed), p) {
				t.Fatalf("Shuffle(%d, %d) differs from one call to the next", n, seed)
			}
		}
	}
	if a, b := Shuffle(1000, 1), Shuffle(1000, 2); slices.Equal(a, b) {
		t.Error("seeds 1 and 2 give the same order of 1000 records")
	}
	if p := Shuffle(1000, 1); slices.Equal(p, Shuffle(1000, 0)) || slices.IsSorted(p) {
		t.Error("seed 1 leaves 1000 records in file order")
	}
}

func isPermutation(p []int, n int) bool {
	if len(p) != n {
		return false
	}
	seen := make([]bool, n)
	for _, i := range p {
		if i < 0 || i >= n || seen[i] {
			return false
		}
		seen[i] = true
	}
	return true
}

func TestTaskSeed(t *testing.T) {
	// The mix is documented for other implementations: pin it.
	if got := TaskSeed(42, 0, 0); got != 7138415436909018950 {
		t.Errorf("TaskSeed(42, 0, 0) = %d, want 7138415436909018950", got)
	}
	type origin struct {
		job        uint64
		pass, task int
	}
	seen := map[uint64]origin{}
	for _, job := range []uint64{0, 1, 7, math.MaxUint64} {
		for pass := range 4 {
			for task := -1; task < 50; task++ {
				s := TaskSeed(job, pass, task)
				if s == 0 {
					t.Fatalf("TaskSeed(%d, %d, %d) = 0, which means file order", job, pass, task)
				}
				if s != TaskSeed(job, pass, task) {
					t.Fatalf("TaskSeed(%d, %d, %d) differs from one call to the next", job, pass, task)
				}
				if prev, ok := seen[s]; ok {
					t.Fatalf("TaskSeed(%d, %d, %d) = TaskSeed%+v", job, pass, task, prev)
				}
				seen[s] = origin{job, pass, task}
			}
		}
	}
}
