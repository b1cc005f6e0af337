package etcdstore

import (
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/trainmaster/master/internal/etcdembed/etcdtest"
	"github.com/trainmaster/master/internal/master"
	"github.com/trainmaster/master/internal/taskqueue"
)

// TestCheckpointsRoundTrip: checkpoints stored in real etcd, readable with
// etcdctl, come back the same; a save drops the ones it names in the
// same write; a master that lost the lock stores nothing.
func TestCheckpointsRoundTrip(t *testing.T) {
	_, cli := etcdtest.Start(t)
	_, l := lead(t, cli, "/job")
	cat := NewCatalog(Config{Client: cli, Namespace: "/job", Fence: l.Fence()})
	cp := func(id int64) master.DataCheckpoint {
		return master.DataCheckpoint{ID: id, Name: "step", Time: time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC), Trainers: 3, Pinned: id == 1,
			Datasets: map[string]master.DatasetPoint{"train": {Round: 1, Gen: 7, Tasks: 20, Records: 345, Trained: taskqueue.Trained{Pass: 2,
				Whole: []int{0, 3, 8, 9, 19}, Part: map[int][]taskqueue.Interval{4: {{From: 0, To: 5}, {From: 7, To: 9}}}}}}}
	}
	for id := int64(1); id <= 3; id++ {
		var drop []int64
		if id == 3 {
			drop = []int64{2}
		}
		if err := cat.SaveCheckpoints(ctx, []master.DataCheckpoint{cp(id)}, drop); err != nil {
			t.Fatal(err)
		}
	}
	got, err := cat.LoadCheckpoints(ctx)
	if err != nil || len(got) != 2 || got[0].ID != 1 || got[1].ID != 3 {
		t.Fatalf("loaded %+v %v", got, err)
	}
	want := cp(3)
	p, w := got[1].Datasets["train"], want.Datasets["train"]
	if got[1].Name != want.Name || !got[1].Time.Equal(want.Time) || got[1].Trainers != 3 || got[1].Pinned ||
		p.Round != w.Round || p.Gen != w.Gen || p.Tasks != w.Tasks || p.Records != w.Records || p.Trained.Pass != w.Trained.Pass ||
		!slices.Equal(p.Trained.Whole, w.Trained.Whole) || !maps.EqualFunc(p.Trained.Part, w.Trained.Part, slices.Equal) {
		t.Fatalf("loaded %+v, want %+v", got[1], want)
	}
	resp, err := cli.Get(ctx, "/job/checkpoints/0000000003")
	var shown map[string]any
	if err != nil || len(resp.Kvs) != 1 || json.Unmarshal(resp.Kvs[0].Value, &shown) != nil || shown["name"] != "step" {
		t.Fatalf("as etcdctl shows it: %s %v", resp.Kvs, err)
	}
	if err := l.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	lead(t, cli, "/job")
	if err := cat.SaveCheckpoints(ctx, []master.DataCheckpoint{cp(4)}, nil); !errors.Is(err, master.ErrLeadershipLost) {
		t.Fatalf("a save after losing the lock: %v", err)
	}
}

// TestRewindThroughEtcd: a rewind's change, split into several
// transactions, writes its entries before the pass key; a master that
// loads the state has the rewound queues, ignoring the entries of the
// generation before.
func TestRewindThroughEtcd(t *testing.T) {
	cli, store, ds, q := storedQueues(t, taskqueue.Config{}, 40, 2) // 20 tasks of 20 records
	store.maxTxnBytes = 600                                         // a few entries a transaction
	now := time.Now()
	for range 20 {
		task, epoch, ch, err := q.Dispatch(now, "a")
		if err != nil {
			t.Fatal(err)
		}
		if err := store.Commit(ctx, 0, ch); err != nil {
			t.Fatal(err)
		}
		if task < 19 {
			_, ch, _ := q.Finish(task, 0, epoch, "a", now)
			if err := store.Commit(ctx, 0, ch); err != nil {
				t.Fatal(err)
			}
		}
	}
	trained := taskqueue.Trained{Whole: []int{0, 1, 2, 5, 6, 7, 8, 9, 10, 11, 12}, Part: map[int][]taskqueue.Interval{3: {{From: 4, To: 9}}}}
	ch, err := q.Rewind(trained, "checkpoint 1, restart a", 99)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Commit(ctx, 0, ch); err != nil {
		t.Fatal(err)
	}
	// The generation was reserved in the pass key before the first entry
	// of it was written.
	resp, err := cli.Get(ctx, store.keys.tasks(), clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	first := int64(0)
	for _, kv := range resp.Kvs {
		if e, err := decodeEntry(kv.Value); err == nil && e.Gen == 99 && (first == 0 || kv.ModRevision < first) {
			first = kv.ModRevision
		}
	}
	if txns := store.Stats().Txns.Load(); first == 0 || txns < 3 {
		t.Fatalf("first entry of generation 99 at revision %d, %d transactions: want several", first, txns)
	}
	pass, err := cli.Get(ctx, store.keys.pass(), clientv3.WithRev(first))
	var reserved passValue
	if err != nil || len(pass.Kvs) != 1 || json.Unmarshal(pass.Kvs[0].Value, &reserved) != nil || reserved.Reserved != 99 || reserved.Gen != 0 {
		t.Fatalf("the pass key when the first entry of generation 99 was written: %s (%v)", pass.Kvs, err)
	}
	snap, err := store.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Gen.Gen != 99 || snap.Gen.Reserved != 99 || snap.Gen.Mark != "checkpoint 1, restart a" || snap.Gen.Left != 400-11*20-5 {
		t.Fatalf("stored generation %+v", snap.Gen)
	}
	r, err := taskqueue.RestoreGen(taskqueue.Config{}, ds.NumTasks(), snap.Dataset.TaskRecords, snap.Pass, snap.Gen, snap.Entries, now)
	if err != nil {
		t.Fatal(err)
	}
	for task := range 20 {
		if got, want := r.Entry(task), q.Entry(task); got.Queue != want.Queue || got.To != want.To || got.Gen != 99 {
			t.Errorf("task %d restored %+v, want %+v", task, got, want)
		}
	}
	if r.Pieces() != q.Pieces() || r.Count(taskqueue.Todo) != q.Count(taskqueue.Todo) || r.Count(taskqueue.Done) != q.Count(taskqueue.Done) {
		t.Fatalf("restored %d pieces, %d todo, %d done; want %d, %d, %d", r.Pieces(), r.Count(taskqueue.Todo), r.Count(taskqueue.Done), q.Pieces(), q.Count(taskqueue.Todo), q.Count(taskqueue.Done))
	}
}

// TestAReservedGenerationIsNotTaken: a rewind cut short after reserving
// its generation and writing some of its entries leaves the state as it
// was, and no later rewind takes its number.
func TestAReservedGenerationIsNotTaken(t *testing.T) {
	cli, store, ds, _ := storedQueues(t, taskqueue.Config{}, 40, 2)
	reserve, _ := json.Marshal(passValue{Pass: 0, Reserved: 7})
	stray := encodeEntry(3, taskqueue.Entry{Pass: 0, Queue: taskqueue.Done, Gen: 7}, maxEntryErrorBytes)
	for key, value := range map[string][]byte{store.keys.pass(): reserve, store.keys.task(3): stray} {
		if _, err := cli.Put(ctx, key, string(value)); err != nil {
			t.Fatal(err)
		}
	}
	snap, err := store.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r, err := taskqueue.RestoreGen(taskqueue.Config{}, ds.NumTasks(), snap.Dataset.TaskRecords, snap.Pass, snap.Gen, snap.Entries, time.Now())
	if err != nil || r.Count(taskqueue.Todo) != 20 || r.Gen().Reserved != 7 {
		t.Fatalf("restored %d in todo, generation %+v (%v): want the state before the rewind, 7 reserved", r.Count(taskqueue.Todo), r.Gen(), err)
	}
	if _, err := r.Rewind(taskqueue.Trained{Whole: []int{0}}, "m2", 7); err == nil {
		t.Fatal("a rewind took the reserved generation")
	}
}
