package etcdstore

import (
	"context"

	"github.com/pkg/errors"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/trainmaster/master/internal/taskqueue"
)

// passKeyBytes is what a group leaves of a transaction's bytes for the
// pass key, written with the last entries of a pass: a small JSON value.
const passKeyBytes = 1 << 10

// GroupLimits implements master.GroupLimiter: a group of queue changes is
// one transaction, the pass key included.
func (s *Store) GroupLimits() (records, bytes int) {
	return s.maxOps - 1, s.maxTxnBytes - passKeyBytes
}

// RecordBytes implements master.GroupLimiter: the entry's key and value
// as Commit writes them.
func (s *Store) RecordBytes(r taskqueue.Record) int {
	return len(s.keys.task(r.Index)) + len(encodeEntry(r.Index, r.Entry, s.maxEntryError()))
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
