package etcdstore

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/pkg/errors"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/trainmaster/master/internal/dataset"
	"github.com/trainmaster/master/internal/etcdembed/etcdtest"
	"github.com/trainmaster/master/internal/master"
	"github.com/trainmaster/master/internal/taskqueue"
)

// TestSaveDatasetTooLarge: a dataset whose meta or a page of whose index
// cannot be one transaction is refused before anything is written, with
// an error wrapping master.ErrDatasetTooLarge that gives its size and the
// limit.
func TestSaveDatasetTooLarge(t *testing.T) {
	_, cli := etcdtest.Start(t)
	path := "/data/train/" + strings.Repeat("d", 40) + "/part-00001.recordio" // 72 bytes
	for _, tc := range []struct {
		name            string
		patterns, files []string
		maxRequestBytes int
		what            string
	}{
		{"60,000 long patterns", append([]string{"/data/train/*.recordio"}, slices.Repeat([]string{path}, 60000)...), []string{path}, 0, "meta"},
		{"a 2 MiB path", []string{"/data/*"}, []string{"/data/" + strings.Repeat("p", 2<<20)}, 0, "files/000000"},
		{"patterns over a small limit", slices.Repeat([]string{path}, 1000), []string{path}, 64 << 10, "meta"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := "/" + strings.ReplaceAll(tc.name, " ", "-")
			leader, _ := lead(t, cli, ns)
			store := New(Config{Client: cli, Namespace: ns, Fence: leader.cfg.Fence, MaxRequestBytes: tc.maxRequestBytes})
			chunks := []dataset.Chunk{{File: 0, NumRecords: 10}}
			ds, err := dataset.Restore(tc.patterns, tc.files, 1, chunks)
			if err != nil {
				t.Fatal(err)
			}
			before, err := cli.Get(ctx, ns+"/", clientv3.WithPrefix())
			if err != nil {
				t.Fatal(err)
			}
			err = store.SaveDataset(ctx, ds)
			if !errors.Is(err, master.ErrDatasetTooLarge) {
				t.Fatalf("save: %v, want master.ErrDatasetTooLarge", err)
			}
			for _, want := range []string{tc.what, fmt.Sprintf("at most %d", store.maxTxnBytes), fmt.Sprintf("limit of %d bytes", store.cfg.MaxRequestBytes)} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			after, err := cli.Get(ctx, ns+"/task_queues/", clientv3.WithPrefix())
			if err != nil {
				t.Fatal(err)
			}
			if len(after.Kvs) != 0 || after.Header.Revision != before.Header.Revision {
				t.Fatalf("a refused dataset wrote %d keys (revision %d -> %d)", len(after.Kvs), before.Header.Revision, after.Header.Revision)
			}
		})
	}
}

// TestSaveAfterAFailedSave: what a save that failed half way left (pages,
// entries, no meta) never reaches a later load: the next save deletes it
// first, and loads read only the pages the meta counts. The failed save is
// of 2,500 files and 200,000 chunks, whose pages take several transactions
// of a 192 KiB request; the one that writes the meta fails.
func TestSaveAfterAFailedSave(t *testing.T) {
	_, cli := etcdtest.Start(t)
	for _, tc := range []struct {
		name string
		fail func(t *testing.T, store *Store, spy *kvSpy)
	}{
		{"a save failing at its meta", func(t *testing.T, store *Store, spy *kvSpy) {
			small := New(Config{Client: store.cfg.Client, Namespace: store.cfg.Namespace, Fence: store.cfg.Fence, MaxRequestBytes: 192 << 10})
			spy.failPut.Store(store.keys.meta())
			defer spy.failPut.Store("")
			if err := small.SaveDataset(ctx, largerDataset(t)); !errors.Is(err, errInjected) {
				t.Fatalf("save: %v, want the injected failure", err)
			}
		}},
		{"pages and entries left by hand", func(t *testing.T, store *Store, _ *kvSpy) {
			big := largerDataset(t)
			for i, page := range filePages(big.Files, filePageBytes) {
				put(t, cli, store.keys.file(i), string(page))
			}
			for i := 0; i*chunksPerPage < big.NumChunks(); i++ {
				put(t, cli, store.keys.chunk(i), string(encodeChunks(big.Chunks()[i*chunksPerPage:min((i+1)*chunksPerPage, big.NumChunks())])))
			}
			put(t, cli, store.keys.task(big.NumTasks()-1), string(encodeEntry(0, taskqueue.Entry{Queue: taskqueue.Done, Epoch: 1}, maxEntryErrorBytes)))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := "/" + strings.ReplaceAll(tc.name, " ", "-")
			leader, _ := lead(t, cli, ns)
			store, spy := spiedStore(t, cli, leader, Config{})
			tc.fail(t, store, spy)
			if resp, err := cli.Get(ctx, store.keys.files(), clientv3.WithPrefix(), clientv3.WithCountOnly()); err != nil || resp.Count < 2 {
				t.Fatalf("the failed save left %v file pages (%v); the test wants some", resp.Count, err)
			}
			if snap, err := store.Load(ctx); err != nil || snap.Dataset != nil {
				t.Fatalf("after a failed save: load %v, %v; want no dataset", snap, err)
			}

			ds := syntheticDataset(t, 95, 10)
			if err := store.SaveDataset(ctx, ds); err != nil {
				t.Fatal(err)
			}
			snap, err := store.Load(ctx)
			if err != nil {
				t.Fatalf("load after a save that followed a failed one: %v", err)
			}
			if !slices.Equal(snap.Dataset.Files, ds.Files) || !slices.Equal(snap.Dataset.Chunks(), ds.Chunks()) || len(entries(t, snap)) != 0 {
				t.Fatalf("loaded %d files and %d chunks, want %d and %d, and no entries", len(snap.Dataset.Files), snap.Dataset.NumChunks(), len(ds.Files), ds.NumChunks())
			}
			resp, err := cli.Get(ctx, store.keys.prefix(), clientv3.WithPrefix(), clientv3.WithKeysOnly())
			if err != nil {
				t.Fatal(err)
			}
			var keys []string
			for _, kv := range resp.Kvs {
				keys = append(keys, string(kv.Key))
			}
			want := []string{store.keys.chunk(0), store.keys.file(0), store.keys.meta(), store.keys.pass()}
			if !slices.Equal(keys, want) {
				t.Fatalf("etcd holds %v, want %v", keys, want)
			}
		})
	}
}

// TestLoadReadsOnlyCountedPages: pages beyond those the meta counts are
// never concatenated into the dataset.
func TestLoadReadsOnlyCountedPages(t *testing.T) {
	_, cli := etcdtest.Start(t)
	store, _ := lead(t, cli, "/extra")
	ds := syntheticDataset(t, 95, 10)
	if err := store.SaveDataset(ctx, ds); err != nil {
		t.Fatal(err)
	}
	put(t, cli, store.keys.file(1), `["/data/train/left-over.recordio"]`)
	put(t, cli, store.keys.chunk(1), string(encodeChunks([]dataset.Chunk{{File: 0, NumRecords: 7}})))
	snap, err := store.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(snap.Dataset.Files, ds.Files) || !slices.Equal(snap.Dataset.Chunks(), ds.Chunks()) {
		t.Fatalf("loaded %d files and %d chunks, want %d and %d", len(snap.Dataset.Files), snap.Dataset.NumChunks(), len(ds.Files), ds.NumChunks())
	}
}

// largerDataset has 2,500 files and 200,000 chunks.
func largerDataset(t *testing.T) *dataset.Dataset {
	t.Helper()
	files := make([]string, 2500)
	for i := range files {
		files[i] = fmt.Sprintf("/data/old/part-%05d.recordio", i)
	}
	chunks := make([]dataset.Chunk, 200000)
	for i := range chunks {
		chunks[i] = dataset.Chunk{File: int32(i / 80), Idx: int32(i % 80), Offset: int64(i%80) * 65536, NumRecords: int64(1 + i%7)}
	}
	ds, err := dataset.Restore([]string{"/data/old/*.recordio"}, files, 10, chunks)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

func put(t *testing.T, cli *clientv3.Client, key, value string) {
	t.Helper()
	if _, err := cli.Put(ctx, key, value); err != nil {
		t.Fatal(err)
	}
}
