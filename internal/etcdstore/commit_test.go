package etcdstore

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pkg/errors"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/trainmaster/master/internal/etcdembed"
	"github.com/trainmaster/master/internal/etcdembed/etcdtest"
	"github.com/trainmaster/master/internal/taskqueue"
)

// TestSplit: units are cut into transactions within both limits, in order,
// never across a unit, a transaction closed only when the next unit does
// not fit; a unit over a limit is an error.
func TestSplit(t *testing.T) {
	put := func(key string, size int) clientv3.Op { return clientv3.OpPut(key, strings.Repeat("v", size-len(key))) }
	singles := func(n, size int) [][]clientv3.Op {
		units := make([][]clientv3.Op, n)
		for i := range units {
			units[i] = []clientv3.Op{put(fmt.Sprintf("k%04d", i), size)}
		}
		return units
	}
	for _, tc := range []struct {
		name            string
		units           [][]clientv3.Op
		maxOps, maxSize int
		want            []int // operations per transaction
		err             bool
	}{
		{"none", nil, 3, 100, nil, false},
		{"by operations", singles(7, 10), 3, 1000, []int{3, 3, 1}, false},
		{"by bytes", singles(7, 10), 100, 25, []int{2, 2, 2, 1}, false},
		{"exactly full", singles(4, 10), 2, 20, []int{2, 2}, false},
		{"a unit is not split", append(singles(2, 10), []clientv3.Op{put("a", 10), put("b", 10)}, []clientv3.Op{put("c", 10)}), 3, 1000, []int{2, 3}, false},
		{"a unit too large", singles(1, 30), 3, 25, nil, true},
		{"a unit of too many operations", [][]clientv3.Op{{put("a", 5), put("b", 5), put("c", 5)}}, 2, 1000, nil, true},
		{"a delete counts its range end", [][]clientv3.Op{{clientv3.OpDelete("/p/", clientv3.WithPrefix())}, {put("k", 10)}}, 10, 12, []int{1, 1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			txns, err := split(tc.units, tc.maxOps, tc.maxSize)
			if (err != nil) != tc.err {
				t.Fatalf("split: %v, want an error: %v", err, tc.err)
			}
			var got []int
			var keys, want []string
			for _, ops := range txns {
				got = append(got, len(ops))
				if len(ops) > tc.maxOps || unitBytes(ops) > tc.maxSize {
					t.Errorf("a transaction of %d operations and %d bytes", len(ops), unitBytes(ops))
				}
				for _, op := range ops {
					keys = append(keys, string(op.KeyBytes()))
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("transactions of %v operations, want %v", got, tc.want)
			}
			if !tc.err {
				for _, u := range tc.units {
					for _, op := range u {
						want = append(want, string(op.KeyBytes()))
					}
				}
				if fmt.Sprint(keys) != fmt.Sprint(want) {
					t.Errorf("keys in the order %v, want %v", keys, want)
				}
			}
		})
	}
}

// TestCommitSplitsByBytes: changes of many large entries commit (today's
// 32 trainers failing at once with 30 KiB reasons were refused by etcd as
// too large) and load back with their reasons, under etcd's default
// request limit and under a small one the store is told of.
func TestCommitSplitsByBytes(t *testing.T) {
	for _, tc := range []struct {
		name            string
		maxRequestBytes int // of etcd and of the store; 0: etcd's default
		entries, reason int
		minTxns         int64
	}{
		{"default limit, 100 entries of 30 KiB", 0, 100, 30 << 10, 3},
		{"default limit, 32 entries of 200 KiB cut to 64 KiB", 0, 32, 200 << 10, 2},
		{"64 KiB limit, 100 entries of 4 KiB", 64 << 10, 100, 4 << 10, 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, cli := etcdtest.Start(t, etcdtest.WithConfig(func(c *etcdembed.Config) { c.MaxRequestBytes = uint(tc.maxRequestBytes) }))
			leader, _ := lead(t, cli, "/big")
			store, spy := spiedStore(t, cli, leader, Config{MaxRequestBytes: tc.maxRequestBytes})
			ds := syntheticDataset(t, tc.entries, 1)
			if err := store.SaveDataset(ctx, ds); err != nil {
				t.Fatal(err)
			}
			reason := func(i int) string { return fmt.Sprintf("task %d: %s", i, strings.Repeat("é", tc.reason/2)) }
			var ch taskqueue.Change
			for i := range tc.entries {
				ch.Records = append(ch.Records, taskqueue.Record{Index: i, Entry: taskqueue.Entry{Queue: taskqueue.Todo, Epoch: 1, Timeouts: 1, Seq: int64(tc.entries + i), Error: reason(i)}})
			}
			before := spy.txns.Load()
			if err := store.Commit(ctx, 0, ch); err != nil {
				t.Fatalf("commit of %d entries of %d bytes: %v", tc.entries, tc.reason, err)
			}
			if txns := spy.txns.Load() - before; txns < tc.minTxns {
				t.Errorf("%d transactions, want at least %d", txns, tc.minTxns)
			}
			snap, err := store.Load(ctx)
			if err != nil {
				t.Fatal(err)
			}
			limit := min(maxEntryErrorBytes, store.maxTxnBytes/4)
			loaded := entries(t, snap)
			if len(loaded) != tc.entries {
				t.Fatalf("loaded %d entries, want %d", len(loaded), tc.entries)
			}
			for _, r := range loaded {
				if want := cutError(reason(r.Index), limit); r.Error != want {
					t.Fatalf("task %d: reason of %d bytes loaded, want %d bytes", r.Index, len(r.Error), len(want))
				}
			}
			if q, err := taskqueue.Restore(taskqueue.Config{}, ds.NumTasks(), ds.TaskRecords, snap.Pass, snap.Entries, time.Now()); err != nil || q.Count(taskqueue.Todo) != tc.entries {
				t.Fatalf("restore: %v", err)
			}
		})
	}
}

// TestCommitEndingAPass: a change that ends a pass and takes several
// transactions, its entries of the new pass listed first (as Merge may
// leave them), fails at each of its transactions in turn. Whichever fails,
// what etcd holds is either the old pass without any entry of the new one,
// or the new pass with every entry of the old one: the pass key goes with
// the last entry of the pass it ends, and no entry of the new pass is ever
// durable before it. And an entry of another pass than the stored one is
// ignored when the queues are restored.
func TestCommitEndingAPass(t *testing.T) {
	const tasks, early = 300, 50 // tasks 0..49 are done early in pass 0 and dispatched again in pass 1
	_, cli := etcdtest.Start(t)
	leader, _ := lead(t, cli, "/pass")
	store, spy := spiedStore(t, cli, leader, Config{})
	ds := syntheticDataset(t, tasks, 1)
	now := time.Now().UTC().Truncate(time.Millisecond)
	var ch taskqueue.Change
	for i := range early {
		ch.Records = append(ch.Records, taskqueue.Record{Index: i, Entry: taskqueue.Entry{Pass: 1, Queue: taskqueue.Pending, Epoch: 1, Seq: int64(i), Dispatched: now, Deadline: now.Add(time.Minute)}})
	}
	for i := early; i < tasks; i++ {
		ch.Records = append(ch.Records, taskqueue.Record{Index: i, Entry: taskqueue.Entry{Pass: 0, Queue: taskqueue.Done, Epoch: 1, Seq: int64(i)}})
	}
	ch.Pass, ch.PassChanged = 1, true
	setUp := func() {
		t.Helper()
		spy.failFrom.Store(0)
		if err := store.SaveDataset(ctx, ds); err != nil {
			t.Fatal(err)
		}
		var first taskqueue.Change
		for i := range early {
			first.Records = append(first.Records, taskqueue.Record{Index: i, Entry: taskqueue.Entry{Pass: 0, Queue: taskqueue.Done, Epoch: 1, Seq: int64(i)}})
		}
		if err := store.Commit(ctx, 0, first); err != nil {
			t.Fatal(err)
		}
	}
	setUp()
	before := spy.txns.Load()
	if err := store.Commit(ctx, 0, ch); err != nil {
		t.Fatal(err)
	}
	txns := spy.txns.Load() - before
	if txns < 3 {
		t.Fatalf("the change took %d transactions; the test wants several", txns)
	}
	for fail := int64(1); fail <= txns; fail++ {
		t.Run(fmt.Sprintf("failing transaction %d of %d", fail, txns), func(t *testing.T) {
			setUp()
			spy.failFrom.Store(spy.txns.Load() + fail)
			if err := store.Commit(ctx, 0, ch); !errors.Is(err, errInjected) {
				t.Fatalf("commit: %v, want the injected failure", err)
			}
			pass, byPass := storedEntries(t, cli, store)
			switch pass {
			case 0:
				if byPass[1] != 0 {
					t.Fatalf("pass 0 stored with %d entries of pass 1", byPass[1])
				}
			case 1:
				if byPass[0] != tasks-early {
					t.Fatalf("pass 1 stored with %d entries of pass 0, want all %d", byPass[0], tasks-early)
				}
			default:
				t.Fatalf("pass %d stored", pass)
			}
		})
	}

	// An entry of a pass other than the stored one means "untouched".
	setUp()
	if _, err := cli.Put(ctx, store.keys.task(tasks-1), string(encodeEntry(0, taskqueue.Entry{Pass: 1, Queue: taskqueue.Done, Epoch: 1}, maxEntryErrorBytes))); err != nil {
		t.Fatal(err)
	}
	snap, err := store.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	q, err := taskqueue.Restore(taskqueue.Config{Passes: 3}, ds.NumTasks(), ds.TaskRecords, snap.Pass, snap.Entries, now)
	if err != nil {
		t.Fatal(err)
	}
	if q.Pass() != 0 || q.Count(taskqueue.Done) != early || q.Entry(tasks-1).Queue != taskqueue.Todo {
		t.Fatalf("restored pass %d with %d done, task %d %v", q.Pass(), q.Count(taskqueue.Done), tasks-1, q.Entry(tasks-1).Queue)
	}
}

// storedEntries reads the stored pass and counts the entries by pass.
func storedEntries(t *testing.T, cli *clientv3.Client, store *Store) (int, map[int]int) {
	t.Helper()
	p, err := store.loadPass(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := cli.Get(ctx, store.keys.tasks(), clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	byPass := map[int]int{}
	for _, kv := range resp.Kvs {
		e, err := decodeEntry(kv.Value)
		if err != nil {
			t.Fatal(err)
		}
		byPass[e.Pass]++
	}
	return p.Pass, byPass
}
