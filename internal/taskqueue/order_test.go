package taskqueue

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/trainmaster/master/go/wire"
)

// passOrders runs every pass of n tasks, one dispatch at a time, each
// finished before the next, and returns the order of each pass.
func passOrders(t *testing.T, cfg Config, n int) [][]int {
	t.Helper()
	q := newQueues(t, cfg, n)
	orders := make([][]int, q.Passes())
	for !q.AllDone() {
		p := q.Pass()
		task, epoch := dispatch(t, q, t0)
		orders[p] = append(orders[p], task)
		if _, _, err := q.Finish(task, p, epoch, "", t0); err != nil {
			t.Fatal(err)
		}
	}
	return orders
}

func TestPassOrder(t *testing.T) {
	const n, passes = 40, 3
	identity := make([]int, n)
	for i := range identity {
		identity[i] = i
	}
	other := passOrders(t, Config{Passes: passes, Seed: 8}, n)
	for _, seed := range []uint64{0, 7, 1 << 63} {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			orders := passOrders(t, Config{Passes: passes, Seed: seed}, n)
			if again := passOrders(t, Config{Passes: passes, Seed: seed}, n); !slices.EqualFunc(orders, again, slices.Equal) {
				t.Fatalf("two runs with seed %d: %v, then %v", seed, orders, again)
			}
			for p, order := range orders {
				if !slices.Equal(slices.Sorted(slices.Values(order)), identity) {
					t.Fatalf("pass %d handed out %v: not every task once", p, order)
				}
				if seed == 0 {
					if !slices.Equal(order, identity) {
						t.Errorf("pass %d without a seed: %v, want task order", p, order)
					}
					continue
				}
				// The order documented in order.go and doc/protocol.md.
				if want := wire.Shuffle(n, wire.TaskSeed(seed, p, orderTask)); !slices.Equal(order, want) {
					t.Errorf("pass %d: %v, want %v", p, order, want)
				}
				if slices.Equal(order, identity) || slices.Equal(order, other[p]) {
					t.Errorf("pass %d with seed %d: %v, the order of no seed or of seed 8", p, seed, order)
				}
				if p > 0 && slices.Equal(order, orders[p-1]) {
					t.Errorf("passes %d and %d have the same order %v", p-1, p, order)
				}
			}
			q := newQueues(t, Config{Seed: seed}, n)
			if seed == 0 && q.positions != nil || seed != 0 && len(q.positions) != n {
				t.Errorf("seed %d: %d positions kept for %d tasks", seed, len(q.positions), n)
			}
		})
	}
}

// orderStore keeps what a store keeps of the changes it is given.
type orderStore struct {
	pass    int
	records map[int]Record
}

func (s *orderStore) commit(ch Change) {
	s.pass = ch.Pass
	for _, r := range ch.Records {
		s.records[r.Index] = r
	}
}

// orderDriver plays a trainer that reports its task and takes the next in
// one call: it fails the first dispatch of every task whose index is 2
// modulo 5 (sent to the end of Todo) and finishes the others.
type orderDriver struct {
	held              bool
	task, epoch, pass int
}

// step reports the held task, if any, and takes the next; it returns the
// task taken, or -1 once every pass is done.
func (d *orderDriver) step(t *testing.T, q *Queues, s *orderStore) int {
	t.Helper()
	if d.held {
		var ch Change
		var err error
		if d.task%5 == 2 && d.epoch == 1 {
			_, ch, err = q.Fail(d.task, d.pass, d.epoch, "", "injected")
		} else {
			_, ch, err = q.Finish(d.task, d.pass, d.epoch, "", t0)
		}
		if err != nil {
			t.Fatal(err)
		}
		s.commit(ch)
		d.held = false
	}
	if q.AllDone() {
		return -1
	}
	pass := q.Pass()
	task, epoch, ch, err := q.Dispatch(t0, "")
	if err != nil {
		t.Fatal(err)
	}
	s.commit(ch)
	*d = orderDriver{held: true, task: task, epoch: epoch, pass: pass}
	return task
}

// TestRestoreContinuesTheOrder: queues restored from what a store holds,
// at any point of a seeded job (a task pending, tasks failed and sent to
// the end of Todo, in the first pass or the next), hand out the same
// tasks in the same order as the queues they were stored from.
func TestRestoreContinuesTheOrder(t *testing.T) {
	const n = 20
	cfg := Config{Passes: 2, Seed: 42}
	for _, cut := range []int{1, 7, 19, 23, 30} {
		t.Run(fmt.Sprint("after ", cut, " dispatches"), func(t *testing.T) {
			q := newQueues(t, cfg, n)
			s := &orderStore{records: map[int]Record{}}
			var d orderDriver
			for range cut {
				d.step(t, q, s)
			}
			r, err := Restore(cfg, n, tenRecords, s.pass, Stored(slices.Collect(maps.Values(s.records))), t0.Add(time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			rd, rs := d, &orderStore{records: maps.Clone(s.records), pass: s.pass}
			var want, got []int
			for task := d.step(t, q, s); task >= 0; task = d.step(t, q, s) {
				want = append(want, task)
			}
			for task := rd.step(t, r, rs); task >= 0; task = rd.step(t, r, rs) {
				got = append(got, task)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("restored in pass %d after %d dispatches, the queues hand out\n%v\nwhere the original ones hand out\n%v", s.pass, cut, got, want)
			}
		})
	}
}
