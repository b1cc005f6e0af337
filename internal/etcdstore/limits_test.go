package etcdstore

import (
	"fmt"
	"strings"
	"testing"

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
// GroupLimits, by entries or by bytes (RecordBytes, counted as Commit
// writes them), is committed in one transaction.
func TestAGroupWithinTheLimitsIsOneTransaction(t *testing.T) {
	_, cli := etcdtest.Start(t)
	_, l := lead(t, cli, "/job")
	for _, byBytes := range []bool{false, true} {
		store := New(Config{Client: cli, Namespace: "/job", Fence: l.Fence(), MaxTxnOps: etcdembed.DefaultMaxTxnOps})
		records, bytes := store.GroupLimits()
		var ch taskqueue.Change
		total := 0
		for i := 0; len(ch.Records) < records; i++ {
			e := taskqueue.Entry{Pass: 0, Queue: taskqueue.Pending, Epoch: 1, Trainer: fmt.Sprint("trainer-", i), Of: i}
			if byBytes {
				e.Error = strings.Repeat("x", 4000)
			}
			r := taskqueue.Record{Index: i, Entry: e}
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
			t.Errorf("by bytes %v: %d entries of %d bytes took %d transactions", byBytes, len(ch.Records), total, n)
		}
		if n := store.Stats().BytesWritten.Load() - written; n != int64(total) {
			t.Errorf("by bytes %v: %d bytes written, RecordBytes counted %d", byBytes, n, total)
		}
		if byBytes == (len(ch.Records) == records) {
			t.Errorf("by bytes %v: %d entries of the %d a group may have", byBytes, len(ch.Records), records)
		}
	}
}
