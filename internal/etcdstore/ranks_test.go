package etcdstore

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/taskqueue"
)

// TestRanksSurviveARestore: two ranks' shares in real etcd: each entry
// names its rank and group (etcdctl shows them), the piece the tail cut is
// stored undispatched, a rank's pending entry has no deadline; a master
// that loads the state counts the same shares and hands the rest.
func TestRanksSurviveARestore(t *testing.T) {
	cfg := taskqueue.Config{}
	cli, store, ds, q := storedQueues(t, cfg, 30, 10) // 3 tasks of 100 records
	g := wire.Group{Ranks: 2, Batch: 8}               // shares of 150
	now := time.Now()
	rankTask := func(rank int) (int, *taskqueue.RankCut) {
		t.Helper()
		task, _, ch, cut, err := q.DispatchRank(now, "r"+string(rune('0'+rank)), taskqueue.Finished{}, rank, g)
		if err != nil {
			t.Fatal(err)
		}
		if err := store.Commit(ctx, 0, ch); err != nil {
			t.Fatal(err)
		}
		return task, cut
	}
	rankTask(0)
	task, cut := rankTask(0) // task 1, cut at 50: piece 3 has 50 to 100
	if cut == nil || cut.Task != task || cut.At != 50 || cut.Piece != 3 {
		t.Fatalf("rank 0's second task %d: cut %+v", task, cut)
	}
	resp, err := cli.Get(ctx, store.keys.task(task))
	var shown map[string]any
	if err != nil || len(resp.Kvs) != 1 || json.Unmarshal(resp.Kvs[0].Value, &shown) != nil ||
		shown["rank"] != nil || shown["ranks"] != float64(2) || shown["batch"] != float64(8) || shown["to"] != float64(50) || shown["deadline"] != nil {
		t.Fatalf("rank 0's cut task as etcdctl shows it: %s (%v)", resp.Kvs, err)
	}

	snap, err := store.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r, err := taskqueue.Restore(cfg, ds.NumTasks(), snap.Dataset.TaskRecords, snap.Pass, snap.Entries, now.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := r.Group(); !ok || got != g || r.Handed(0) != 150 || r.Handed(1) != 0 {
		t.Fatalf("restored: group %v %v, handed %d and %d", got, ok, r.Handed(0), r.Handed(1))
	}
	if _, _, _, _, err := r.DispatchRank(now, "r0", taskqueue.Finished{}, 0, g); !wire.Is(err, wire.TextRankDone) {
		t.Fatalf("rank 0 after the restore: %v", err)
	}
	piece, _, _, _, err := r.DispatchRank(now, "r1", taskqueue.Finished{}, 1, g)
	if e := r.Entry(piece); err != nil || piece != 3 || e.From != 50 || e.To != 100 || e.Rank != 1 {
		t.Fatalf("rank 1 after the restore: piece %d %+v %v", piece, e, err)
	}
}
