package master

import (
	"context"
	"fmt"
	"net/rpc"
	"sync"
	"testing"
	"time"

	"github.com/trainmaster/master/go/client"
	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/taskqueue"
	"github.com/trainmaster/master/internal/trainerport"
)

// rankCall is one GetTask of a rank over net/rpc (gob).
func rankCall(t *testing.T, c *rpc.Client, finished wire.Task, rank int, g wire.Group, pass int) (wire.Task, error) {
	t.Helper()
	finished.Trainer = "rank-" + string(rune('0'+rank))
	finished.Rank, finished.Ranks, finished.Batch = rank, g.Ranks, g.Batch
	finished.OnePass, finished.Pass = true, pass
	var reply wire.Task
	err := c.Call("Master.GetTask", finished, &reply)
	return reply, err
}

// TestGroupOverTheWire: three ranks of batch 4 ask in turn over net/rpc,
// each finishing what it was handed. Each is handed its share exactly,
// with its plan in every reply; once done it is answered rank done, and
// asking for the next pass waits (no task available) until every rank
// finished; the refusals carry the contract's texts and name both sides.
func TestGroupOverTheWire(t *testing.T) {
	pattern := writeDataset(t, t.TempDir(), 2, 5) // 10 tasks of 3 records: 30
	s, _ := newService(t, Config{ChunksPerTask: 1, Queue: taskqueue.Config{Passes: 2}})
	if err := s.ReportDataset(ctx, []string{pattern}); err != nil {
		t.Fatal(err)
	}
	p := startPort(t, s, trainerport.Config{})
	c, err := rpc.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	g := wire.Group{Ranks: 4, Batch: 4} // shares 8, 8, 7, 7; 2 batches each
	held := make([]wire.Task, 4)
	got := make([]int64, 4)
	done := map[int]bool{}
	for len(done) < 4 {
		for rank := range 4 {
			if done[rank] {
				continue
			}
			task, err := rankCall(t, c, held[rank], rank, g, 0)
			held[rank] = wire.Task{}
			if wire.Is(err, wire.TextRankDone) || (wire.Is(err, wire.TextPassOver) && len(done) == 3) {
				done[rank] = true // the last rank's finish ended the pass
				continue
			}
			if err != nil {
				t.Fatalf("rank %d: %v", rank, err)
			}
			n := int64(3)
			if task.To > 0 {
				n = int64(task.To - task.From)
			}
			got[rank] += n
			share := g.Share(30, rank)
			if task.Rank != rank || task.Ranks != 4 || task.Batch != 4 || task.RankRecords != share || task.RankBatches != 2 || task.RankLeft != share-got[rank] {
				t.Fatalf("rank %d: reply %+v (handed %d so far)", rank, task, got[rank])
			}
			held[rank] = task
			if rank == 3 && got[rank] == share {
				// Rank 3, its share out but unfinished, asks for the next
				// pass: it waits.
				if _, err := rankCall(t, c, wire.Task{}, rank, g, 1); !wire.Is(err, wire.TextNoTask) {
					t.Fatalf("rank 3 asking for pass 1 during pass 0: %v, want %q", err, wire.TextNoTask)
				}
			}
		}
	}
	for rank := range 4 {
		if got[rank] != g.Share(30, rank) {
			t.Errorf("rank %d handed %d records, want %d", rank, got[rank], g.Share(30, rank))
		}
	}
	if st := status(t, s); st.Pass != 1 {
		t.Fatalf("pass %d once every rank finished its share, want 1", st.Pass)
	}

	// Refusals, word for word where they name both sides.
	if _, err := rankCall(t, c, wire.Task{}, 0, g, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := rankCall(t, c, wire.Task{}, 1, wire.Group{Ranks: 3, Batch: 4}, 1); err == nil ||
		err.Error() != "bad group: rank 1 asks as a group of 3 ranks, batch 4; pass 1 is trained by a group of 4 ranks, batch 4" {
		t.Fatalf("a rank of another group: %v", err)
	}
	var reply wire.Task
	err = c.Call("Master.GetTask", wire.Task{Trainer: "outsider"}, &reply)
	if err == nil || err.Error() != "bad group: trainer outsider asks outside any group; pass 1 is trained by a group of 4 ranks, batch 4" {
		t.Fatalf("a trainer outside the group: %v", err)
	}
	if _, err := rankCall(t, c, wire.Task{}, 0, wire.Group{Ranks: 31, Batch: 4}, 1); !wire.Is(err, wire.TextPassTooSmall) {
		t.Fatalf("a group larger than the pass: %v", err)
	}
}

// TestGroupSharesSurviveARestore: a new master of the same store counts
// what each rank was handed from the stored entries, so that the ranks go
// on with the same shares.
func TestGroupSharesSurviveARestore(t *testing.T) {
	pattern := writeDataset(t, t.TempDir(), 1, 7) // 7 tasks, 21 records
	store := NewMemoryStore()
	cfg := Config{ChunksPerTask: 1, Store: store, Queue: taskqueue.Config{Passes: 1}}
	s, _ := newService(t, cfg)
	if err := s.ReportDataset(ctx, []string{pattern}); err != nil {
		t.Fatal(err)
	}
	g := wire.Group{Ranks: 2, Batch: 5} // shares 11 and 10
	a, err := s.GetTask(ctx, wire.Task{Trainer: "r0", Rank: 0, Ranks: 2, Batch: 5})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetTask(ctx, wire.Task{Trainer: "r1", Rank: 1, Ranks: 2, Batch: 5}); err != nil {
		t.Fatal(err)
	}
	s.Close()

	restored, _ := newService(t, cfg)
	if err := restored.Restore(ctx); err != nil {
		t.Fatal(err)
	}
	a.Rank, a.Ranks, a.Batch, a.Trainer = 0, 2, 5, "r0"
	var left int64 = -1
	for {
		next, err := restored.GetTask(ctx, a)
		if wire.Is(err, wire.TextRankDone) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		left = next.RankLeft
		a = next
		a.Trainer = "r0"
	}
	if left != 0 || train(restored).q.Handed(0) != g.Share(21, 0) {
		t.Fatalf("rank 0 after the restore: left %d, handed %d, want its share %d", left, train(restored).q.Handed(0), g.Share(21, 0))
	}
}

// TestGoRanksTrainTheirShares: three go/client ranks, each reading ahead,
// train two passes side by side: in each pass every rank trains exactly
// its share and every record once, and a rank done with its share waits
// for the pass to end instead of ending its loop.
func TestGoRanksTrainTheirShares(t *testing.T) {
	pattern := writeDataset(t, t.TempDir(), 2, 7) // 14 tasks of 3 records: 42
	s, _ := newService(t, Config{ChunksPerTask: 1, Queue: taskqueue.Config{Passes: 2}})
	if err := s.ReportDataset(ctx, []string{pattern}); err != nil {
		t.Fatal(err)
	}
	p := startPort(t, s, trainerport.Config{})
	g := wire.Group{Ranks: 3, Batch: 4}
	type got struct {
		perPass map[int]int64
		records map[string]int
	}
	results := make([]got, 3)
	var wg sync.WaitGroup
	for rank := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := client.New(client.Static(p.addr), client.Config{Name: fmt.Sprintf("rank-%d", rank), Group: g, Rank: rank, Prefetch: 1,
				MinBackoff: time.Millisecond, MaxBackoff: 20 * time.Millisecond})
			defer c.Close()
			r := got{perPass: map[int]int64{}, records: map[string]int{}}
			cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			for rec, err := range c.Records(cctx) {
				if err != nil {
					t.Errorf("rank %d: %v", rank, err)
					return
				}
				if rec.RankRecords != g.Share(42, rank) || rec.RankBatches != 4 {
					t.Errorf("rank %d: record with plan %d records, %d batches", rank, rec.RankRecords, rec.RankBatches)
				}
				r.perPass[rec.Pass]++
				r.records[fmt.Sprintf("%d %s", rec.Pass, rec.Data)]++
			}
			results[rank] = r
		}()
	}
	wg.Wait()
	all := map[string]int{}
	for rank, r := range results {
		for pass := range 2 {
			if r.perPass[pass] != g.Share(42, rank) {
				t.Errorf("rank %d trained %d records in pass %d, want %d", rank, r.perPass[pass], pass, g.Share(42, rank))
			}
		}
		for k, n := range r.records {
			all[k] += n
		}
	}
	if len(all) != 84 {
		t.Errorf("%d records of the 2 passes trained, want 84", len(all))
	}
	for k, n := range all {
		if n != 1 {
			t.Errorf("%s trained %d times", k, n)
		}
	}
}
