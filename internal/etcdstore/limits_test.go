package etcdstore

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/etcdembed"
	"github.com/trainmaster/master/internal/etcdembed/etcdtest"
	"github.com/trainmaster/master/internal/taskqueue"
)

// TestDetectMaxTxnOps: the probe finds the largest limit it tries that the
// real etcd takes.
func TestDetectMaxTxnOps(t *testing.T) {
	cases := []struct {
		etcd uint // etcd's --max-txn-ops; 0: etcd-embed's default
		want int
	}{
		{0, etcdembed.DefaultMaxTxnOps},
		{1000, 512},
		{128, DefaultMaxTxnOps},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprint(tc.etcd), func(t *testing.T) {
			_, cli := etcdtest.Start(t, etcdtest.WithConfig(func(c *etcdembed.Config) { c.MaxTxnOps = tc.etcd }))
			if got, err := DetectMaxTxnOps(ctx, cli, "/probe"); err != nil || got != tc.want {
				t.Fatalf("detected %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}

// TestAGroupWithinTheLimitsIsOneTransaction: a change filling the store's
// GroupLimits, by entries (etcd's default --max-txn-ops) or by bytes
// (RecordBytes, a bound of what Commit writes), is committed in one
// transaction, into a real etcd that takes 8,192 operations.
func TestAGroupWithinTheLimitsIsOneTransaction(t *testing.T) {
	_, cli := etcdtest.Start(t)
	_, l := lead(t, cli, "/job")
	cases := []struct {
		name      string
		maxTxnOps int
		reason    int // bytes of each entry's failure reason
		byEntries bool
	}{
		{"etcd's default: by entries", DefaultMaxTxnOps, 0, true},
		{"8,192: by bytes", etcdembed.DefaultMaxTxnOps, 0, false},
		{"8,192, long reasons: by bytes", etcdembed.DefaultMaxTxnOps, 4000, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			store := New(Config{Client: cli, Namespace: "/job", Fence: l.Fence(), MaxTxnOps: tc.maxTxnOps})
			records, bytes := store.GroupLimits()
			var ch taskqueue.Change
			total := 0
			for i := 0; len(ch.Records) < records; i++ {
				r := taskqueue.Record{Index: i, Entry: taskqueue.Entry{Pass: 0, Queue: taskqueue.Pending, Epoch: 1,
					Trainer: fmt.Sprint("trainer-", i), Of: i, Error: strings.Repeat("x", tc.reason)}}
				if total+store.RecordBytes(r) > bytes {
					break
				}
				total += store.RecordBytes(r)
				ch.Records = append(ch.Records, r)
			}
			txns, written := store.Stats().Txns.Load(), store.Stats().BytesWritten.Load()
			if err := store.Commit(ctx, 0, ch); err != nil {
				t.Fatal(err)
			}
			if n := store.Stats().Txns.Load() - txns; n != 1 {
				t.Errorf("%d entries counted %d bytes took %d transactions", len(ch.Records), total, n)
			}
			if n := store.Stats().BytesWritten.Load() - written; n > int64(total) {
				t.Errorf("%d bytes written, RecordBytes counted %d", n, total)
			}
			if tc.byEntries != (len(ch.Records) == records) {
				t.Errorf("%d entries of the %d a group may have", len(ch.Records), records)
			}
			t.Logf("%d entries, %d bytes counted", len(ch.Records), total)
		})
	}
}

// TestRecordBytesBoundsTheEncoding: whatever an entry holds (numbers at
// their longest, names and reasons of bytes JSON escapes, reasons past
// what the store keeps), RecordBytes is at least its key and value as
// Commit writes them.
func TestRecordBytesBoundsTheEncoding(t *testing.T) {
	store := New(Config{Namespace: "/a/long/namespace/of/a/job"})
	late := time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.UTC)
	const n = math.MinInt64
	cases := map[string]taskqueue.Record{
		"a dispatch": {Index: 7, Entry: taskqueue.Entry{Pass: 3, Queue: taskqueue.Pending, Epoch: 2, Seq: 99,
			Dispatched: time.Now(), Deadline: time.Now(), Trainer: "gpu7-4242-9f3c-rank3"}},
		"every field at its longest": {Index: math.MaxInt, Entry: taskqueue.Entry{Pass: n, Queue: taskqueue.Failed, Epoch: n,
			Timeouts: n, Seq: n, Dispatched: late, Deadline: late, Progress: n, For: taskqueue.Finished{Task: n, Epoch: n, Pass: n, Ask: n},
			Of: n, From: n, To: n, Rank: n, Group: wire.Group{Ranks: n, Batch: n}, Gen: n,
			Trainer: strings.Repeat("<\x00\"\u2028\xff", 50), Error: strings.Repeat("&\x01\xfe", 1000)}},
		"a reason past what is kept": {Index: 0, Entry: taskqueue.Entry{Queue: taskqueue.Todo, Error: strings.Repeat("\x02", 200_000)}},
	}
	for name, r := range cases {
		written := len(store.keys.task(r.Index)) + len(encodeEntry(r.Index, r.Entry, store.maxEntryError()))
		if got := store.RecordBytes(r); got < written {
			t.Errorf("%s: RecordBytes %d, written %d", name, got, written)
		}
	}
}
