package etcdstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/trainmaster/master/internal/dataset"
	"github.com/trainmaster/master/internal/election"
	"github.com/trainmaster/master/internal/etcdembed/etcdtest"
	"github.com/trainmaster/master/internal/master"
	"github.com/trainmaster/master/internal/taskqueue"
)

var ctx = context.Background()

// lead wins the lock under namespace and returns a store fenced on it.
func lead(t testing.TB, cli *clientv3.Client, namespace string) (*Store, *election.Leadership) {
	t.Helper()
	s, err := concurrency.NewSession(cli, concurrency.WithTTL(5))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	l, err := election.Campaign(ctx, s, namespace+"/master/lock/", "test")
	if err != nil {
		t.Fatal(err)
	}
	return New(Config{Client: cli, Namespace: namespace, Fence: l.Fence()}), l
}

// syntheticDataset has n chunks of 10 records spread over 100 files,
// chunksPerTask to a task; the files need not exist, the store only keeps
// the index.
func syntheticDataset(t testing.TB, n, chunksPerTask int) *dataset.Dataset {
	t.Helper()
	files := make([]string, 100)
	for i := range files {
		files[i] = fmt.Sprintf("/data/train/part-%05d.recordio", i)
	}
	chunks := make([]dataset.Chunk, n)
	for i := range chunks {
		chunks[i] = dataset.Chunk{File: int32(i * 100 / n), Idx: int32(i % 1000), Offset: int64(i%1000) * 4096, NumRecords: 10}
	}
	ds, err := dataset.Restore([]string{"/data/train/*.recordio"}, files, chunksPerTask, chunks)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

func TestRoundTripThroughTheService(t *testing.T) {
	_, cli := etcdtest.Start(t)
	store, _ := lead(t, cli, "/job")
	ds := syntheticDataset(t, 95, 10) // 10 tasks, the last of 5 chunks
	if err := store.SaveDataset(ctx, ds); err != nil {
		t.Fatal(err)
	}
	cfg := taskqueue.Config{Passes: 2, MaxTimeouts: 1}
	q, err := taskqueue.New(cfg, ds.NumTasks(), ds.TaskRecords)
	if err != nil {
		t.Fatal(err)
	}
	commit := func(ch taskqueue.Change) {
		t.Helper()
		if err := store.Commit(ctx, 0, ch); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	// Pass 0 ends; in pass 1: task 0 done, 1 pending, 2 failed for good.
	for range ds.NumTasks() {
		task, epoch, ch, _ := q.Dispatch(now, "")
		commit(ch)
		_, ch, _ = q.Finish(task, 0, epoch, "", now)
		commit(ch)
	}
	for range 3 {
		_, _, ch, _ := q.Dispatch(now, "")
		commit(ch)
	}
	_, ch, _ := q.Finish(0, 1, 1, "", now)
	commit(ch)
	for range 2 {
		_, ch, _ = q.Fail(2, 1, q.Entry(2).Epoch, "", "unreadable block")
		commit(ch)
		if q.Entry(2).Queue == taskqueue.Todo {
			for q.Entry(2).Queue != taskqueue.Pending {
				_, _, ch, _ = q.Dispatch(now, "")
				commit(ch)
			}
		}
	}

	snap, err := store.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Dataset.NumChunks() != 95 || snap.Dataset.NumTasks() != 10 || snap.Dataset.Files[99] != ds.Files[99] || snap.Pass != 1 {
		t.Fatalf("loaded dataset of %d chunks, pass %d", snap.Dataset.NumChunks(), snap.Pass)
	}
	r, err := taskqueue.Restore(cfg, 10, snap.Dataset.TaskRecords, snap.Pass, snap.Entries, now)
	if err != nil {
		t.Fatal(err)
	}
	for _, qu := range []taskqueue.Queue{taskqueue.Todo, taskqueue.Pending, taskqueue.Done, taskqueue.Failed} {
		if r.Count(qu) != q.Count(qu) {
			t.Errorf("%v: %d restored, %d before", qu, r.Count(qu), q.Count(qu))
		}
	}
	if e := r.Entry(2); e.Queue != taskqueue.Failed || e.Error != q.Entry(2).Error {
		t.Errorf("failed task restored as %+v", e)
	}
	// What etcdctl shows is JSON a person can read.
	resp, err := cli.Get(ctx, "/job/task_queues/tasks/0000000002")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatal(err)
	}
	var shown map[string]any
	if err := json.Unmarshal(resp.Kvs[0].Value, &shown); err != nil || shown["queue"] != "failed" {
		t.Fatalf("task entry as etcdctl shows it: %s", resp.Kvs[0].Value)
	}
}

// TestFencedWriteAfterLosingTheLock: once the lock key is gone, writes are
// rejected with master.ErrLeadershipLost and nothing is written.
func TestFencedWriteAfterLosingTheLock(t *testing.T) {
	_, cli := etcdtest.Start(t)
	store, l := lead(t, cli, "")
	ds := syntheticDataset(t, 20, 10)
	if err := store.SaveDataset(ctx, ds); err != nil {
		t.Fatal(err)
	}
	if err := l.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	successor, _ := lead(t, cli, "")
	if err := successor.Commit(ctx, 0, taskqueue.Change{Pass: 0, Records: []taskqueue.Record{{Index: 1, Entry: taskqueue.Entry{Queue: taskqueue.Done}}}}); err != nil {
		t.Fatal(err)
	}
	before, _ := cli.Get(ctx, "/task_queues/", clientv3.WithPrefix())
	err := store.Commit(ctx, 0, taskqueue.Change{Pass: 1, PassChanged: true, Records: []taskqueue.Record{{Index: 1, Entry: taskqueue.Entry{Queue: taskqueue.Todo}}}})
	if !errors.Is(err, master.ErrLeadershipLost) {
		t.Fatalf("stale commit: %v, want master.ErrLeadershipLost", err)
	}
	if err := store.SaveDataset(ctx, ds); !errors.Is(err, master.ErrLeadershipLost) {
		t.Fatalf("stale dataset save: %v", err)
	}
	after, _ := cli.Get(ctx, "/task_queues/", clientv3.WithPrefix())
	if after.Header.Revision != before.Header.Revision {
		t.Fatalf("a rejected write changed etcd: revision %d -> %d", before.Header.Revision, after.Header.Revision)
	}
	if store.Stats().Rejected.Load() != 2 {
		t.Fatalf("%d rejected writes counted, want 2", store.Stats().Rejected.Load())
	}
}

func TestRefusesANewerFormat(t *testing.T) {
	_, cli := etcdtest.Start(t)
	store, _ := lead(t, cli, "")
	if err := store.SaveDataset(ctx, syntheticDataset(t, 10, 10)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, meta string }{
		{"newer format", `{"format":2,"patterns":["x"],"chunks_per_task":10,"files":100,"chunks":10,"tasks":1}`},
		{"not json", `garbage`},
		{"counts disagree", `{"format":1,"patterns":["x"],"chunks_per_task":10,"files":100,"chunks":11,"tasks":2}`},
	} {
		if _, err := cli.Put(ctx, "/task_queues/meta", tc.meta); err != nil {
			t.Fatal(err)
		}
		if _, err := store.Load(ctx); !errors.Is(err, ErrFormat) {
			t.Errorf("%s: load %v, want ErrFormat", tc.name, err)
		}
	}
}

// TestLargeDataset persists and recovers a million chunks, and checks that
// a dispatch writes as many bytes as with a thousand.
func TestLargeDataset(t *testing.T) {
	if testing.Short() {
		t.Skip("a million chunks")
	}
	_, cli := etcdtest.Start(t)
	perDispatch := map[int]int64{}
	for _, n := range []int{1000, 1000000} {
		store, _ := lead(t, cli, fmt.Sprintf("/n%d", n))
		ds := syntheticDataset(t, n, 10)
		start := time.Now()
		if err := store.SaveDataset(ctx, ds); err != nil {
			t.Fatal(err)
		}
		saved := time.Since(start)
		q, err := taskqueue.New(taskqueue.Config{}, ds.NumTasks(), ds.TaskRecords)
		if err != nil {
			t.Fatal(err)
		}
		before := store.Stats().BytesWritten.Load()
		const dispatches = 100
		for range dispatches {
			_, _, ch, err := q.Dispatch(time.Now(), "")
			if err != nil {
				t.Fatal(err)
			}
			if err := store.Commit(ctx, 0, ch); err != nil {
				t.Fatal(err)
			}
		}
		perDispatch[n] = (store.Stats().BytesWritten.Load() - before) / dispatches
		start = time.Now()
		snap, err := store.Load(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if records := entries(t, snap); snap.Dataset.NumChunks() != n || len(records) != dispatches {
			t.Fatalf("%d chunks: loaded %d chunks and %d entries", n, snap.Dataset.NumChunks(), len(records))
		}
		t.Logf("%d chunks: saved in %v, loaded in %v, %d bytes per dispatch", n, saved.Round(time.Millisecond), time.Since(start).Round(time.Millisecond), perDispatch[n])
	}
	if small, large := perDispatch[1000], perDispatch[1000000]; large > small+8 {
		t.Fatalf("a dispatch writes %d bytes at 1M chunks, %d at 1k", large, small)
	}
}

// TestCompactsHistory: after CompactEvery revisions the store compacts all
// but the last CompactKeep, so etcd's history does not grow without bound.
func TestCompactsHistory(t *testing.T) {
	_, cli := etcdtest.Start(t)
	s, err := concurrency.NewSession(cli, concurrency.WithTTL(5))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l, err := election.Campaign(ctx, s, "/master/lock/", "test")
	if err != nil {
		t.Fatal(err)
	}
	store := New(Config{Client: cli, Fence: l.Fence(), CompactEvery: 50, CompactKeep: 10})
	if err := store.SaveDataset(ctx, syntheticDataset(t, 100, 10)); err != nil {
		t.Fatal(err)
	}
	first, _ := cli.Get(ctx, "/task_queues/pass")
	for i := range 120 {
		ch := taskqueue.Change{Records: []taskqueue.Record{{Index: i % 10, Entry: taskqueue.Entry{Queue: taskqueue.Pending, Epoch: i + 1}}}}
		if err := store.Commit(ctx, 0, ch); err != nil {
			t.Fatal(err)
		}
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		_, err := cli.Get(ctx, "/task_queues/pass", clientv3.WithRev(first.Header.Revision))
		if err != nil && strings.Contains(err.Error(), "compacted") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("revision %d still readable after 120 commits: %v", first.Header.Revision, err)
		}
	}
}

func TestFilePagesStaySmall(t *testing.T) {
	long := strings.Repeat("d/", 2000) + "part.recordio" // a 4 KiB path
	for _, tc := range []struct {
		files []string
		pages int
	}{
		{nil, 0},
		{make([]string, 2500), 3},
		{[]string{long, long, long}, 1},
		{slices.Repeat([]string{long}, 200), 4},
	} {
		pages := filePages(tc.files, filePageBytes)
		var back []string
		for _, p := range pages {
			if len(p) > 512<<10 {
				t.Fatalf("a page of %d bytes", len(p))
			}
			var files []string
			if err := json.Unmarshal(p, &files); err != nil {
				t.Fatal(err)
			}
			back = append(back, files...)
		}
		if len(pages) != tc.pages || len(back) != len(tc.files) {
			t.Errorf("%d files: %d pages holding %d, want %d pages", len(tc.files), len(pages), len(back), tc.pages)
		}
	}
}

// TestLoadReadsEveryRange: entries on both sides of every read boundary
// come back, in task order, and keys that are not tasks of the dataset are
// refused by name wherever they sort.
func TestLoadReadsEveryRange(t *testing.T) {
	_, cli := etcdtest.Start(t)
	store, _ := lead(t, cli, "/ranges")
	ds := syntheticDataset(t, 2*entriesPerRead+100, 1)
	if err := store.SaveDataset(ctx, ds); err != nil {
		t.Fatal(err)
	}
	tasks := []int{0, entriesPerRead - 1, entriesPerRead, 2*entriesPerRead - 1, 2 * entriesPerRead, ds.NumTasks() - 1}
	var ch taskqueue.Change
	for _, i := range tasks {
		ch.Records = append(ch.Records, taskqueue.Record{Index: i, Entry: taskqueue.Entry{Queue: taskqueue.Done, Epoch: 1, Seq: int64(i)}})
	}
	if err := store.Commit(ctx, 0, ch); err != nil {
		t.Fatal(err)
	}
	snap, err := store.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for _, r := range entries(t, snap) {
		got = append(got, r.Index)
	}
	if !slices.Equal(got, tasks) {
		t.Fatalf("loaded entries of tasks %v, want %v", got, tasks)
	}
	prefix := "/ranges/task_queues/tasks/"
	for _, stray := range []string{"00000000001", fmt.Sprintf("%010d", ds.NumTasks()), "zz", "-1"} {
		t.Run(stray, func(t *testing.T) {
			if _, err := cli.Put(ctx, prefix+stray, `{"pass":0,"queue":"done","seq":0}`); err != nil {
				t.Fatal(err)
			}
			defer cli.Delete(ctx, prefix+stray)
			if err := loadAll(store); !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), prefix+stray) {
				t.Fatalf("a stray key %s loaded: %v", stray, err)
			}
		})
	}
}

// entries reads every entry of a snapshot.
func entries(t testing.TB, snap *master.Snapshot) []taskqueue.Record {
	t.Helper()
	var records []taskqueue.Record
	for r, err := range snap.Entries {
		if err != nil {
			t.Fatal(err)
		}
		records = append(records, r)
	}
	return records
}
