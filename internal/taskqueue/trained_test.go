package taskqueue

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// trainedByWalk is what Trained must return, read the plain way: a walk
// of every entry of the pass, each contributing the run it holds trained.
func trainedByWalk(q *Queues, held []HeldPosition) Trained {
	t := Trained{Pass: q.pass, Part: map[int][]Interval{}}
	if q.AllDone() {
		return t
	}
	reached := map[int]int{}
	for _, h := range held {
		if h.Pass != q.pass || h.Gen != q.generation.Gen || h.Task < 0 || h.Task >= len(q.entries) {
			continue
		}
		if e := q.entry(h.Task); e.Epoch >= h.Epoch && e.Queue != Done {
			reached[h.Task] = max(reached[h.Task], min(h.Done, int(q.pieces.end(h.Task))))
		}
	}
	runs := map[int][]Interval{}
	for i := range q.entries {
		if int(q.entries[i].pass) != q.pass {
			continue
		}
		e := q.entry(i)
		upTo := max(e.Progress, reached[i])
		if e.Queue == Done {
			upTo = int(q.pieces.end(i))
		}
		if upTo > e.From {
			runs[e.Of] = append(runs[e.Of], Interval{From: e.From, To: upTo})
		}
	}
	for task, rs := range runs {
		rs = joined(rs)
		if len(rs) == 1 && rs[0].From == 0 && int64(rs[0].To) == q.records(task) {
			t.Whole = append(t.Whole, task)
			continue
		}
		t.Part[task] = rs
	}
	slices.Sort(t.Whole)
	return t
}

func sameTrained(a, b Trained) bool {
	return a.Pass == b.Pass && slices.Equal(a.Whole, b.Whole) && maps.EqualFunc(a.Part, b.Part, slices.Equal)
}

// TestTrainedIsTheWalkOfEveryEntry drives queues at random (dispatches by
// several trainers, stragglers split and backed up, progress, finishes,
// failures, timeouts, rewinds, restores from the store) and checks at
// every step that Trained, which reads the Done bits and visits only the
// entries that can be trained in part, says what a walk of every entry
// says.
func TestTrainedIsTheWalkOfEveryEntry(t *testing.T) {
	for _, policy := range []Stragglers{StragglersOff, StragglersSplit, StragglersBackup} {
		for seed := range uint64(40) {
			t.Run(fmt.Sprintf("policy %d seed %d", policy, seed), func(t *testing.T) {
				trainedWalk(t, policy, seed)
			})
		}
	}
}

func trainedWalk(t *testing.T, policy Stragglers, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 99))
	records := func(task int) int64 { return int64(20 + task%7) }
	cfg := Config{Passes: 3, MinSamples: 1, Window: 4, Timeout: time.Minute, TimeoutMin: time.Second, Stragglers: policy, Seed: seed}
	const tasks = 70 // past a word of bits
	q, err := New(cfg, tasks, records)
	if err != nil {
		t.Fatal(err)
	}
	store := newOrderStore()
	now := t0
	type dispatch struct{ task, epoch, pass int }
	holding := map[string]dispatch{}
	var gen Generation // the store's
	trainers := []string{"a", "b", "c", "d", "e"}
	check := func(step int) {
		t.Helper()
		var held []HeldPosition
		for _, name := range trainers {
			if d, ok := holding[name]; ok && rng.IntN(2) == 0 {
				held = append(held, HeldPosition{Task: d.task, Epoch: d.epoch, Pass: d.pass, Gen: q.generation.Gen, Done: rng.IntN(30)})
			}
		}
		got, _ := q.Trained(held)
		if want := trainedByWalk(q, held); !sameTrained(got, want) {
			t.Fatalf("step %d: Trained %+v, the walk of every entry %+v", step, got, want)
		}
	}
	for step := 0; step < 3000 && !q.AllDone(); step++ {
		now = now.Add(time.Duration(rng.IntN(3000)) * time.Millisecond)
		trainer := trainers[rng.IntN(len(trainers))]
		d, holds := holding[trainer]
		var ch Change
		var err error
		r := rng.IntN(100)
		switch {
		case holds && r < 30:
			_, ch, err = q.Finish(d.task, d.pass, d.epoch, trainer, now)
			delete(holding, trainer)
		case holds && r < 35:
			_, ch, err = q.Fail(d.task, d.pass, d.epoch, trainer, "bad record")
			delete(holding, trainer)
		case holds && r < 60:
			_, ch, err = q.Progress(d.task, d.pass, d.epoch, rng.IntN(30), trainer, now)
		case !holds && r < 70:
			var task, epoch int
			task, epoch, ch, _, err = q.DispatchFor(now, trainer, Finished{})
			if err == nil {
				holding[trainer] = dispatch{task, epoch, q.pass}
			}
		case r < 75:
			_, ch = q.Expire(now.Add(time.Hour))
		case r < 77:
			tr, _ := q.Trained(nil)
			ch, err = q.Rewind(tr, fmt.Sprint("step ", step), max(q.generation.Gen, q.generation.Reserved)+1)
			clear(holding)
		case r < 79:
			q, err = RestoreGen(cfg, tasks, records, store.pass, gen, Stored(store.all()), now)
			if err != nil {
				t.Fatalf("step %d: restore: %v", step, err)
			}
			clear(holding)
			check(step)
			continue
		}
		if err != nil && (r >= 75 || !errors.Is(err, ErrNoTask) && !errors.Is(err, ErrBadReport)) {
			t.Fatalf("step %d: %v", step, err)
		}
		if err == nil && !ch.Empty() {
			store.commit(ch)
		}
		if ch.PassChanged {
			gen = ch.Gen
		}
		check(step)
	}
}
