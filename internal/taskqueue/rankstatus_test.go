package taskqueue

import (
	"reflect"
	"testing"

	"github.com/trainmaster/master/go/wire"
)

// TestRankFigures: what the queues show of each rank of the pass's group:
// its share, the records handed to it (pending and done) and trained
// (done), the names holding its pending tasks (sorted, once each), for
// the first n ranks only;
// nothing while no group trains the pass.
func TestRankFigures(t *testing.T) {
	g := wire.Group{Ranks: 3, Batch: 4} // 4 tasks of 10: shares 14, 13, 13
	// ask hands rank a task as trainer, returning it and its epoch.
	ask := func(t *testing.T, q *Queues, rank int, trainer string) (int, int) {
		t.Helper()
		task, epoch, _, _, err := q.DispatchRank(t0, trainer, Finished{}, rank, g)
		if err != nil {
			t.Fatalf("rank %d: %v", rank, err)
		}
		return task, epoch
	}
	finish := func(t *testing.T, q *Queues, task, epoch int, trainer string) {
		t.Helper()
		if _, _, err := q.Finish(task, 0, epoch, trainer, t0); err != nil {
			t.Fatal(err)
		}
	}
	// underWay: rank 0 (r0) is handed task 0 and task 1 cut at 4, and
	// finished task 0; rank 1 the piece of task 1's rest (6 records)
	// as r1b, then task 2 cut at 7 as r1; rank 2 nothing yet.
	underWay := func(t *testing.T, q *Queues) {
		t0task, e0 := ask(t, q, 0, "r0")
		ask(t, q, 0, "r0")
		finish(t, q, t0task, e0, "r0")
		ask(t, q, 1, "r1b")
		ask(t, q, 1, "r1")
	}
	rank0 := RankFigure{Rank: 0, Trainers: []string{"r0"}, Share: 14, Handed: 14, Done: 10}
	rank1 := RankFigure{Rank: 1, Trainers: []string{"r1", "r1b"}, Share: 13, Handed: 13}
	rank2 := RankFigure{Rank: 2, Share: 13}
	for _, c := range []struct {
		name  string
		setup func(*testing.T, *Queues)
		n     int
		want  []RankFigure
		group bool
	}{
		{"no group", func(*testing.T, *Queues) {}, 64, nil, false},
		{"trainers outside any group", func(t *testing.T, q *Queues) { dispatch(t, q, t0) }, 64, nil, false},
		{"under way, every rank", underWay, 64, []RankFigure{rank0, rank1, rank2}, true},
		{"under way, the first two", underWay, 2, []RankFigure{rank0, rank1}, true},
		{"under way, none shown", underWay, 0, []RankFigure{}, true},
		{"rank 0 trained its share", func(t *testing.T, q *Queues) {
			a, ea := ask(t, q, 0, "r0")
			b, eb := ask(t, q, 0, "r0")
			finish(t, q, a, ea, "r0")
			finish(t, q, b, eb, "someone") // a finish counts whoever reports it
		}, 1, []RankFigure{{Rank: 0, Share: 14, Handed: 14, Done: 14}}, true},
		{"a lost rank's tasks are no rank's", func(t *testing.T, q *Queues) {
			underWay(t, q)
			q.Release("r1")
		}, 64, []RankFigure{rank0, {Rank: 1, Trainers: []string{"r1b"}, Share: 13, Handed: 6}, rank2}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			q := newQueues(t, Config{}, 4)
			c.setup(t, q)
			got, ok := q.RankFigures(c.n)
			if ok != c.group || !reflect.DeepEqual(got, c.want) {
				t.Errorf("RankFigures(%d) = %+v, %v; want %+v, %v", c.n, got, ok, c.want, c.group)
			}
		})
	}
}
