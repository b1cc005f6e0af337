package etcdstore

import (
	"encoding/json"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/dataset"
	"github.com/trainmaster/master/internal/etcdembed/etcdtest"
	"github.com/trainmaster/master/internal/taskqueue"
)

// TestPiecesSurviveARestore: a straggler split in real etcd: the piece and
// the cut task's end are stored (etcdctl shows them), and a master that
// loads the state has the same piece, the same cut, and finishes the pass
// with every record counted once.
func TestPiecesSurviveARestore(t *testing.T) {
	cfg := taskqueue.Config{MinSamples: 1, Window: 1, Stragglers: taskqueue.StragglersSplit}
	cli, store, ds, q := storedQueues(t, cfg, 30, 10) // 3 tasks of 100 records
	commit := func(ch taskqueue.Change, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if err := store.Commit(ctx, 0, ch); err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Now()
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	dispatch := func(now time.Time, trainer string) int {
		t.Helper()
		task, _, ch, err := q.Dispatch(now, trainer)
		commit(ch, err)
		return task
	}
	finish := func(task int, now time.Time) {
		t.Helper()
		_, ch, err := q.Finish(task, 0, 1, "a", now)
		commit(ch, err)
	}
	// "a" trains at 0.1 s a record; "slow" at 1 a second is split by "b".
	finish(dispatch(at(0), "a"), at(10))
	slow := dispatch(at(10), "slow")
	finish(dispatch(at(10), "a"), at(20))
	_, ch, err := q.Progress(slow, 0, 1, 10, "slow", at(20))
	commit(ch, err)
	piece := dispatch(at(27), "b")
	if piece != 3 {
		t.Fatalf("dispatch to the idle trainer: %d, want piece 3", piece)
	}

	resp, err := cli.Get(ctx, store.keys.task(piece))
	var shown map[string]any
	if err != nil || len(resp.Kvs) != 1 || json.Unmarshal(resp.Kvs[0].Value, &shown) != nil ||
		shown["of"] != float64(slow) || shown["from"] != float64(26) || shown["to"] != float64(100) || shown["trainer"] != "b" {
		t.Fatalf("piece as etcdctl shows it: %s (%v)", resp.Kvs, err)
	}

	snap, err := store.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r, err := taskqueue.Restore(cfg, ds.NumTasks(), snap.Dataset.TaskRecords, snap.Pass, snap.Entries, at(30))
	if err != nil {
		t.Fatal(err)
	}
	if p := r.Entry(piece); r.Pieces() != 1 || p.Of != slow || p.From != 26 || p.To != 100 || p.Queue != taskqueue.Pending || r.Entry(slow).To != 26 {
		t.Fatalf("restored: %d pieces, piece %+v, task %+v", r.Pieces(), p, r.Entry(slow))
	}
	if rep, _, _ := r.Progress(slow, 0, 1, 24, "slow", at(31)); rep.To != 26 {
		t.Fatalf("the straggler's report after the restore: %+v, want its end 26", rep)
	}
	for _, task := range []int{slow, piece} {
		if rep, _, err := r.Finish(task, 0, 1, "", at(40)); rep != wire.Recorded || err != nil {
			t.Fatalf("finish %d: %v %v", task, rep, err)
		}
	}
	if !r.AllDone() {
		t.Fatalf("pass %d after the last piece, want every pass done", r.Pass())
	}
}

// storedQueues starts an etcd, leads a job "/job" in it, saves a dataset
// of chunks chunks of 10 records, perTask to a task, and returns new
// queues of it with cfg.
func storedQueues(t *testing.T, cfg taskqueue.Config, chunks, perTask int) (*clientv3.Client, *Store, *dataset.Dataset, *taskqueue.Queues) {
	t.Helper()
	_, cli := etcdtest.Start(t)
	store, _ := lead(t, cli, "/job")
	ds := syntheticDataset(t, chunks, perTask)
	if err := store.SaveDataset(ctx, ds); err != nil {
		t.Fatal(err)
	}
	q, err := taskqueue.New(cfg, ds.NumTasks(), ds.TaskRecords)
	if err != nil {
		t.Fatal(err)
	}
	return cli, store, ds, q
}
