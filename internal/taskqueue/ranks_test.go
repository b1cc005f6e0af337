package taskqueue

import (
	"errors"
	"testing"
	"time"

	"github.com/trainmaster/master/go/wire"
)

// uneven gives the tasks 10, 25, 7, 40, 3, ... records: shares end inside
// tasks.
func uneven(task int) int64 { return []int64{10, 25, 7, 40, 3, 18, 1, 33}[task%8] }

// rankDriver plays the ranks of a group: each asks, in turn, for the next
// task of its share and finishes what it was handed; every change goes
// to the store.
type rankDriver struct {
	q     *Queues
	store *orderStore
	g     wire.Group
	got   map[int][]Record // rank -> the dispatches it was handed
}

func (d *rankDriver) ask(t *testing.T, rank int, now time.Time) (Record, *RankCut, error) {
	t.Helper()
	task, epoch, ch, cut, err := d.q.DispatchRank(now, trainerOf(rank), Finished{}, rank, d.g)
	if err != nil {
		return Record{}, nil, err
	}
	d.store.commit(ch)
	e := d.q.Entry(task)
	if e.Queue != Pending || e.Epoch != epoch || e.Rank != rank || e.Group != d.g || !e.Deadline.IsZero() {
		t.Fatalf("rank %d handed task %d: entry %+v", rank, task, e)
	}
	r := Record{Index: task, Entry: e}
	d.got[rank] = append(d.got[rank], r)
	return r, cut, nil
}

func trainerOf(rank int) string { return "rank-" + string(rune('a'+rank)) }

// TestRanksGetTheirShares: three ranks with batch 4 take turns over a
// pass of uneven tasks: each is handed exactly its share, cut where the
// share ends; every record of the pass is handed once; a rank with its
// share is answered rank done; the pass ends once all finish.
func TestRanksGetTheirShares(t *testing.T) {
	const tasks = 8
	q, err := New(Config{Passes: 2}, tasks, uneven)
	if err != nil {
		t.Fatal(err)
	}
	d := &rankDriver{q: q, store: newOrderStore(), g: wire.Group{Ranks: 3, Batch: 4}, got: map[int][]Record{}}
	total := q.PassRecords() // 137
	done := map[int]bool{}
	cuts := 0
	for len(done) < 3 {
		for rank := range 3 {
			if done[rank] {
				continue
			}
			_, cut, err := d.ask(t, rank, t0)
			if errors.Is(err, wire.ErrRankDone) {
				done[rank] = true
				continue
			}
			if err != nil {
				t.Fatalf("rank %d: %v", rank, err)
			}
			if cut != nil {
				cuts++
			}
		}
	}
	if cuts == 0 || cuts > 2 {
		t.Errorf("%d cuts, want 1 or 2 (one at most per share's end)", cuts)
	}
	covered := map[[2]int]int{} // (task, record) -> times handed
	for rank := range 3 {
		var n int64
		for _, r := range d.got[rank] {
			n += q.Length(r.Entry)
			end := r.To
			if end == 0 {
				end = int(uneven(r.Of))
			}
			for i := r.From; i < end; i++ {
				covered[[2]int{r.Of, i}]++
			}
		}
		if want := d.g.Share(total, rank); n != want || q.Handed(rank) != want {
			t.Errorf("rank %d handed %d records (queues say %d), want its share %d", rank, n, q.Handed(rank), want)
		}
	}
	if int64(len(covered)) != total {
		t.Errorf("%d records handed, the pass has %d", len(covered), total)
	}
	for rec, times := range covered {
		if times != 1 {
			t.Errorf("record %v handed %d times", rec, times)
		}
	}
	// A new master of the stored entries knows the shares and the group.
	r, err := Restore(q.cfg, tasks, uneven, d.store.pass, Stored(d.store.all()), t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if g, ok := r.Group(); !ok || g != d.g {
		t.Fatalf("restored group %v %v", g, ok)
	}
	for rank := range 3 {
		if r.Handed(rank) != q.Handed(rank) {
			t.Errorf("restored: rank %d handed %d, want %d", rank, r.Handed(rank), q.Handed(rank))
		}
	}
	if expired, _ := r.Expire(t0.Add(1000 * time.Hour)); len(expired) != 0 {
		t.Errorf("restored ranks' dispatches expired: %v", expired)
	}
	// Every rank finishes: the pass ends, and the next has no group.
	for rank := range 3 {
		for _, rec := range d.got[rank] {
			if _, ch, err := q.Finish(rec.Index, 0, rec.Epoch, trainerOf(rank), t0); err != nil {
				t.Fatal(err)
			} else {
				d.store.commit(ch)
			}
		}
	}
	if q.Pass() != 1 {
		t.Fatalf("pass %d after every rank finished, want 1", q.Pass())
	}
	if _, ok := q.Group(); ok {
		t.Error("pass 1 starts with a group")
	}
}

// TestRankDispatchHasNoDeadline: a rank trains at the group's pace: its
// dispatch never times out, and the others' timeouts are untouched.
func TestRankDispatchHasNoDeadline(t *testing.T) {
	q := newQueues(t, Config{Timeout: time.Minute}, 4)
	g := wire.Group{Ranks: 2, Batch: 5}
	task, _, _, _, err := q.DispatchRank(t0, "r0", Finished{}, 0, g)
	if err != nil {
		t.Fatal(err)
	}
	if expired, _ := q.Expire(t0.Add(24 * time.Hour)); len(expired) != 0 {
		t.Fatalf("expired %v", expired)
	}
	if e := q.Entry(task); e.Queue != Pending {
		t.Fatalf("task %d: %+v", task, e)
	}
	if _, ok := q.NextDeadline(); ok {
		t.Error("a deadline for the master's timer")
	}
}

// TestGroupRefusals: the texts a rank or a trainer is refused with.
func TestGroupRefusals(t *testing.T) {
	g := wire.Group{Ranks: 3, Batch: 4}
	cases := []struct {
		name  string
		setup func(q *Queues) // what happened before in the pass
		rank  int
		g     wire.Group
		want  error
	}{
		{"another size", func(q *Queues) { mustRank(t, q, 0, g) }, 1, wire.Group{Ranks: 4, Batch: 4}, wire.ErrBadGroup},
		{"another batch", func(q *Queues) { mustRank(t, q, 0, g) }, 1, wire.Group{Ranks: 3, Batch: 8}, wire.ErrBadGroup},
		{"rank past the group", func(*Queues) {}, 3, g, wire.ErrBadGroup},
		{"negative rank", func(*Queues) {}, -1, g, wire.ErrBadGroup},
		{"no batch", func(*Queues) {}, 0, wire.Group{Ranks: 3}, wire.ErrBadGroup},
		{"a pass trained outside", func(q *Queues) { dispatch(t, q, t0) }, 0, g, wire.ErrBadGroup},
		{"fewer records than ranks", func(*Queues) {}, 0, wire.Group{Ranks: 50, Batch: 4}, wire.ErrPassTooSmall},
		{"uneven shares of batch 1", func(*Queues) {}, 0, wire.Group{Ranks: 3, Batch: 1}, wire.ErrPassTooSmall},
		{"more ranks than tasks can be cut for", func(*Queues) {}, 0, wire.Group{Ranks: 7, Batch: 2}, wire.ErrPassTooSmall},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			q := newQueues(t, Config{}, 4) // 40 records
			c.setup(q)
			if _, _, _, _, err := q.DispatchRank(t0, "r", Finished{}, c.rank, c.g); !errors.Is(err, c.want) {
				t.Fatalf("%v", err)
			}
		})
	}
	q := newQueues(t, Config{}, 4)
	mustRank(t, q, 0, g)
	if _, _, _, err := q.Dispatch(t0, "outsider"); !errors.Is(err, wire.ErrBadGroup) || !wire.Is(err, "outsider") {
		t.Fatalf("a trainer outside the group: %v", err)
	}
}

func mustRank(t *testing.T, q *Queues, rank int, g wire.Group) int {
	t.Helper()
	task, _, _, _, err := q.DispatchRank(t0, trainerOf(rank), Finished{}, rank, g)
	if err != nil {
		t.Fatal(err)
	}
	return task
}

// TestLostRankGivesItsRecordsBack: a rank's tasks released (its trainer
// lost) are no rank's until handed again, and its share is handed anew.
func TestLostRankGivesItsRecordsBack(t *testing.T) {
	q := newQueues(t, Config{}, 6) // 60 records, shares of 20
	g := wire.Group{Ranks: 3, Batch: 4}
	first := mustRank(t, q, 1, g)
	mustRank(t, q, 1, g)
	if q.Handed(1) != 20 {
		t.Fatalf("rank 1 handed %d", q.Handed(1))
	}
	released, ch := q.Release(trainerOf(1))
	if len(released) != 2 || q.Handed(1) != 0 {
		t.Fatalf("released %v, rank 1 handed %d", released, q.Handed(1))
	}
	for _, r := range ch.Records {
		if r.Group.Ranks != 0 || r.Queue != Todo {
			t.Errorf("released entry %+v", r)
		}
	}
	if _, ok := q.Group(); ok {
		t.Error("the group outlives its last entry")
	}
	if task := mustRank(t, q, 1, g); task != first {
		t.Errorf("rank 1 handed task %d again first, want %d", task, first)
	}
}

// TestCheckRecordRank: stored ranks are checked like every field.
func TestCheckRecordRank(t *testing.T) {
	g := wire.Group{Ranks: 3, Batch: 4}
	for _, c := range []struct {
		name string
		r    Record
		ok   bool
	}{
		{"pending rank", Record{Index: 1, Entry: Entry{Queue: Pending, Epoch: 1, Rank: 2, Group: g}}, true},
		{"done rank", Record{Index: 1, Entry: Entry{Queue: Done, Epoch: 1, Rank: 0, Group: g}}, true},
		{"rank in todo", Record{Index: 1, Entry: Entry{Queue: Todo, Epoch: 1, Rank: 0, Group: g}}, false},
		{"rank past the group", Record{Index: 1, Entry: Entry{Queue: Done, Epoch: 1, Rank: 3, Group: g}}, false},
		{"rank without group", Record{Index: 1, Entry: Entry{Queue: Done, Epoch: 1, Rank: 1}}, false},
		{"cut piece, undispatched", Record{Index: 5, Entry: Entry{Queue: Todo, Epoch: 0, Of: 1, From: 3, To: 10, Progress: 3, Seq: -1}}, true},
		{"rewound task", Record{Index: 1, Entry: Entry{Queue: Todo, Epoch: 0}}, true},
		{"pending of epoch 0", Record{Index: 1, Entry: Entry{Queue: Pending, Epoch: 0}}, false},
		{"failed of epoch 0", Record{Index: 1, Entry: Entry{Queue: Failed, Epoch: 0}}, false},
	} {
		if err := CheckRecord(c.r, 4); (err == nil) != c.ok {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

// TestRankTakesOverATaskTrainedInPart: a rank lost after reporting
// progress in a task; the rank that takes the task over is handed only its
// untrained records (the trained ones settled, Done and no rank's), so
// that no rank is counted past its share; the records trained by the lost
// rank are missing from the others' shares (a lost rank ends a DDP step
// anyway: the group restarts from its checkpoint).
func TestRankTakesOverATaskTrainedInPart(t *testing.T) {
	records := func(task int) int64 { return []int64{10, 30, 30}[task] }
	q, err := New(Config{MinSamples: 1, Window: 1}, 3, records)
	if err != nil {
		t.Fatal(err)
	}
	g := wire.Group{Ranks: 2, Batch: 2} // shares of 35
	first := mustRank(t, q, 0, g)
	if _, _, err := q.Progress(first, 0, 1, 2, trainerOf(0), t0.Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	mustRank(t, q, 1, g) // task 1: 30
	q.Release(trainerOf(0))
	task := mustRank(t, q, 1, g)
	e := q.Entry(task)
	if e.Of != first || e.From != 2 || e.To != 7 || q.Handed(1) != 35 {
		t.Fatalf("rank 1 handed %+v, %d records in all; want records 2 to 7 of task %d, 35", e, q.Handed(1), first)
	}
	if settled := q.Entry(first); settled.Queue != Done || settled.To != 2 || settled.Epoch != 0 {
		t.Fatalf("the trained records: %+v", settled)
	}
	var handed int64
	for {
		task, _, _, _, err := q.DispatchRank(t0, trainerOf(0), Finished{}, 0, g)
		if errors.Is(err, ErrNoTask) {
			break // the rest of the pass is out
		}
		if err != nil {
			t.Fatal(err)
		}
		handed += q.Length(q.Entry(task))
	}
	if handed != 33 || q.Handed(0) != 33 {
		t.Fatalf("rank 0 handed %d (queues: %d): the 35 of its share less the 2 trained before", handed, q.Handed(0))
	}
}
