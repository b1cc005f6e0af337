package etcdstore

import (
	"context"
	"time"

	"github.com/pkg/errors"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/taskqueue"
)

// passKeyBytes is what a group leaves of a transaction's bytes for the
// pass key, written with the last entries of a pass: a small JSON value.
const passKeyBytes = 1 << 10

// GroupLimits implements master.GroupLimiter: a group of queue changes is
// one transaction, the pass key included.
func (s *Store) GroupLimits() (records, bytes int) {
	return EntriesPerTxn(s.cfg.MaxTxnOps), s.maxTxnBytes - passKeyBytes
}

// EntriesPerTxn is the most task entries one commit writes in a
// transaction of etcd's --max-txn-ops maxTxnOps: the store's margin and
// the pass key less.
func EntriesPerTxn(maxTxnOps int) int { return maxTxnOps - opsMargin - 1 }

// RecordBytes implements master.GroupLimiter: at least the bytes of the
// entry's key and value as Commit writes them. It is a bound, not the
// encoding, so that a group counts its entries without encoding each one
// twice: every field present, each number with its own digits, and each
// byte of the trainer's name and of the failure reason at its most
// escaped in JSON (6 bytes, \u00XX).
func (s *Store) RecordBytes(r taskqueue.Record) int {
	e := r.Entry
	n := len(s.keys) + len("tasks/") + max(10, digits(int64(r.Index))) + entryFrame + jsonEscaped*len(e.Trainer)
	for _, v := range [...]int64{int64(e.Pass), int64(e.Epoch), int64(e.Timeouts), e.Seq, int64(e.Progress), int64(e.Of),
		int64(e.From), int64(e.To), int64(e.Rank), int64(e.Group.Ranks), int64(e.Group.Batch), int64(e.Gen),
		int64(e.For.Task), int64(e.For.Epoch), int64(e.For.Pass), e.For.Ask} {
		n += digits(v)
	}
	if e.Error != "" {
		n += jsonEscaped*min(len(e.Error), s.maxEntryError()) + len(cutSuffix)
	}
	return n
}

// jsonEscaped is the most bytes JSON makes of one byte of a string.
const jsonEscaped = 6

// cutSuffix bounds what cutError adds to a reason it cuts.
const cutSuffix = "... (12345678901234567890 bytes, cut to 12345678901234567890 by the store)"

// entryFrame is what an entry's encoding holds besides its numbers and
// strings, at its longest: every field's name, the longest queue, both
// times at their longest. It is measured on an entry with each of its 16
// numbers 0 or 1 (one digit each, counted again by RecordBytes) and a trainer
// and reason of one byte each (counted again too).
var entryFrame = func() int {
	longest := time.Date(9999, 12, 31, 23, 59, 59, 999_000_000, time.UTC)
	e := taskqueue.Entry{Queue: taskqueue.Pending, Dispatched: longest, Deadline: longest, Error: "x", Trainer: "x"}
	// omitempty drops a zero: every number that may be omitted is 1 here,
	// as long as 0.
	e.Epoch, e.Timeouts, e.Progress, e.Of, e.From, e.To, e.Rank, e.Gen = 1, 1, 1, 1, 1, 1, 1, 1
	e.Group, e.For = wire.Group{Ranks: 1, Batch: 1}, taskqueue.Finished{Ask: 1}
	return len(encodeEntry(0, e, maxEntryErrorBytes))
}()

// digits counts the decimal digits of i, its sign included.
func digits(i int64) int {
	n := 1
	if i < 0 {
		n++
	}
	for ; i <= -10 || i >= 10; i /= 10 {
		n++
	}
	return n
}

// maxEntryError is the most bytes of a failure reason an entry keeps.
func (s *Store) maxEntryError() int { return min(maxEntryErrorBytes, s.maxTxnBytes/4) }

// maxTxnOpsTried are the --max-txn-ops DetectMaxTxnOps tries, largest
// first: etcd's error does not say its limit.
var maxTxnOpsTried = []int{8192, 4096, 2048, 1024, 512, 256, DefaultMaxTxnOps}

// DetectMaxTxnOps finds the --max-txn-ops of the etcd cli talks to, among
// maxTxnOpsTried (DefaultMaxTxnOps when it takes none larger), with
// read-only transactions of that many reads of key.
func DetectMaxTxnOps(ctx context.Context, cli *clientv3.Client, key string) (int, error) {
	for _, n := range maxTxnOpsTried[:len(maxTxnOpsTried)-1] {
		reads := make([]clientv3.Op, n)
		for i := range reads {
			reads[i] = clientv3.OpGet(key, clientv3.WithCountOnly())
		}
		_, err := cli.Txn(ctx).Then(reads...).Commit()
		switch {
		case err == nil:
			return n, nil
		case !errors.Is(err, rpctypes.ErrTooManyOps) && !errors.Is(err, rpctypes.ErrGRPCTooManyOps):
			return 0, errors.Wrapf(err, "etcdstore: a transaction of %d reads of %s, to learn etcd's --max-txn-ops", n, key)
		}
	}
	return DefaultMaxTxnOps, nil
}
