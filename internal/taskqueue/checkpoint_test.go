package taskqueue

import (
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/trainmaster/master/go/wire"
)

// trainAll hands out every task and piece of the pass to trainer "t" and
// returns the runs of records handed, per task, until Todo is empty.
func trainAll(t *testing.T, q *Queues, store *orderStore, now time.Time) map[int][]Interval {
	t.Helper()
	handed := map[int][]Interval{}
	for {
		task, _, ch, err := q.Dispatch(now, "t")
		if errors.Is(err, ErrNoTask) {
			return handed
		}
		if err != nil {
			t.Fatal(err)
		}
		store.commit(ch)
		e := q.Entry(task)
		handed[e.Of] = append(handed[e.Of], Interval{From: e.Progress, To: int(q.pieces.end(task))})
	}
}

// TestRewindHandsOutWhatWasNotTrained: a checkpoint mid-pass holds one
// task done, one trained in part by its reports, one by its holder's word;
// training goes on past it; a rewind to it hands out exactly the records
// it did not hold trained, once, and a new master of the store does the
// same, ignoring the entries of the generation before.
func TestRewindHandsOutWhatWasNotTrained(t *testing.T) {
	store := newOrderStore()
	q := newQueues(t, Config{Passes: 2, MinSamples: 1, Window: 1}, 5) // 5 tasks of 10
	step := func(ch Change, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		store.commit(ch)
	}
	var epochs [4]int
	for range 4 {
		task, epoch, ch, err := q.Dispatch(t0, "t")
		step(ch, err)
		epochs[task] = epoch
	}
	_, ch, err := q.Finish(0, 0, epochs[0], "t", t0.Add(time.Second))
	step(ch, err)
	_, ch, err = q.Progress(1, 0, epochs[1], 4, "t", t0.Add(2*time.Second))
	step(ch, err)
	held := []HeldPosition{
		{Task: 2, Epoch: epochs[2], Pass: 0, Done: 7},
		{Task: 3, Epoch: epochs[3], Pass: 0, Done: 12},        // past its end: clamped, noted
		{Task: 1, Epoch: epochs[1], Pass: 0, Gen: 3, Done: 9}, // another generation's: nothing
	}
	cp, notes := q.Trained(held)
	want := Trained{Pass: 0, Whole: []int{0, 3}, Part: map[int][]Interval{1: {{0, 4}}, 2: {{0, 7}}}}
	if cp.Pass != want.Pass || !slices.Equal(cp.Whole, want.Whole) || !maps.EqualFunc(cp.Part, want.Part, slices.Equal) || len(notes) != 1 {
		t.Fatalf("trained %+v (notes %q), want %+v", cp, notes, want)
	}
	// Training goes on: everything is finished, the pass ends.
	for task := 1; task < 4; task++ {
		_, ch, err := q.Finish(task, 0, epochs[task], "t", t0.Add(3*time.Second))
		step(ch, err)
	}

	ch, err = q.Rewind(cp, "checkpoint 1, restart a", 1)
	step(ch, err)
	if g := q.Gen(); g.Gen != 1 || g.Pass != 0 || g.Left != 50-31 || g.Mark != "checkpoint 1, restart a" || q.Pass() != 0 {
		t.Fatalf("after the rewind: generation %+v, pass %d", g, q.Pass())
	}
	if q.PassRecords() != 19 {
		t.Errorf("records a group shares after the rewind: %d, want 19", q.PassRecords())
	}
	restored, err := RestoreGen(q.cfg, 5, tenRecords, store.pass, q.Gen(), Stored(store.all()), t0)
	if err != nil {
		t.Fatal(err)
	}
	wantLeft := map[int][]Interval{1: {{4, 10}}, 2: {{7, 10}}, 4: {{0, 10}}}
	for name, r := range map[string]*Queues{"rewound": q, "restored": restored} {
		got := trainAll(t, r, newOrderStore(), t0.Add(time.Minute))
		if !maps.EqualFunc(got, wantLeft, slices.Equal) {
			t.Errorf("%s: handed %v, want %v", name, got, wantLeft)
		}
	}
}

// TestRewindOfAWholePass: a checkpoint that holds all of its pass
// trained ends that pass at the rewind; one of a pass all done ends them.
func TestRewindOfAWholePass(t *testing.T) {
	q := newQueues(t, Config{Passes: 3}, 2)
	ch, err := q.Rewind(Trained{Pass: 1, Whole: []int{0, 1}}, "m", 1)
	if err != nil || q.Pass() != 2 || !ch.PassChanged || ch.Pass != 2 || ch.Gen.Gen != 1 {
		t.Fatalf("rewind to a trained pass 1: pass %d, change %+v, %v", q.Pass(), ch, err)
	}
	if _, err := q.Rewind(Trained{Pass: 3}, "m2", 7); err != nil || !q.AllDone() {
		t.Fatalf("rewind to the end: %v, all done %v", err, q.AllDone())
	}
}

// TestCheckTrained: what a stored checkpoint may not hold.
func TestCheckTrained(t *testing.T) {
	q := newQueues(t, Config{Passes: 2}, 3)
	for _, c := range []struct {
		name string
		t    Trained
		ok   bool
	}{
		{"fine", Trained{Pass: 1, Whole: []int{0}, Part: map[int][]Interval{2: {{1, 3}, {5, 10}}}}, true},
		{"a pass beyond", Trained{Pass: 3}, false},
		{"an unknown task", Trained{Whole: []int{3}}, false},
		{"tasks out of order", Trained{Whole: []int{1, 0}}, false},
		{"runs touching", Trained{Part: map[int][]Interval{1: {{0, 3}, {3, 5}}}}, false},
		{"a run past the end", Trained{Part: map[int][]Interval{1: {{5, 11}}}}, false},
		{"an empty run", Trained{Part: map[int][]Interval{1: {{5, 5}}}}, false},
		{"whole and in part", Trained{Whole: []int{1}, Part: map[int][]Interval{1: {{0, 3}}}}, false},
		{"as many pieces as a pass holds", Trained{Part: map[int][]Interval{0: {{1, 2}, {3, 10}}}}, true},
		{"more pieces than a pass holds", Trained{Part: map[int][]Interval{0: {{1, 2}, {3, 4}}}}, false},
	} {
		err := q.CheckTrained(c.t)
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, wire.ErrBadCheckpoint)) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

// TestGroupAfterARewind: the ranks of a group share what a rewind left,
// on another world size than before; the entries it made Done are no
// trainer's outside the group.
func TestGroupAfterARewind(t *testing.T) {
	q := newQueues(t, Config{}, 6) // 60 records
	if _, err := q.Rewind(Trained{Whole: []int{0, 1}, Part: map[int][]Interval{2: {{0, 5}}}}, "m", 1); err != nil {
		t.Fatal(err)
	}
	g := wire.Group{Ranks: 2, Batch: 4} // 35 left: shares 18 and 17
	var handed [2]int64
	for rank := range 2 {
		for {
			task, _, _, _, err := q.DispatchRank(t0, trainerOf(rank), Finished{}, rank, g)
			if errors.Is(err, wire.ErrRankDone) {
				break
			}
			if err != nil {
				t.Fatalf("rank %d: %v", rank, err)
			}
			handed[rank] += q.Length(q.Entry(task))
		}
	}
	if handed != [2]int64{18, 17} {
		t.Fatalf("handed %v, want 18 and 17", handed)
	}
}
