package etcdstore

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/pkg/errors"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/trainmaster/master/internal/etcdembed/etcdtest"
)

// errInjected is what a kvSpy's failing transactions return.
var errInjected = errors.New("injected: connection to etcd lost")

// kvSpy passes a client's reads and transactions on to etcd, counting the
// reads of keys under prefix (and how many are in flight at once) and the
// transactions. From the failFrom-th transaction on (1-based; 0: never),
// and any transaction that puts the key failPut holds (a string; "":
// none), transactions fail without reaching etcd.
type kvSpy struct {
	clientv3.KV
	prefix      string
	reads       atomic.Int64
	inFlight    atomic.Int64
	maxInFlight atomic.Int64
	txns        atomic.Int64
	failFrom    atomic.Int64
	failPut     atomic.Value
}

func (k *kvSpy) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	if k.prefix != "" && strings.HasPrefix(key, k.prefix) {
		k.reads.Add(1)
		n := k.inFlight.Add(1)
		defer k.inFlight.Add(-1)
		for {
			m := k.maxInFlight.Load()
			if n <= m || k.maxInFlight.CompareAndSwap(m, n) {
				break
			}
		}
	}
	return k.KV.Get(ctx, key, opts...)
}

func (k *kvSpy) Txn(ctx context.Context) clientv3.Txn {
	return &spyTxn{Txn: k.KV.Txn(ctx), kv: k}
}

type spyTxn struct {
	clientv3.Txn
	kv   *kvSpy
	fail bool
}

func (t *spyTxn) If(cs ...clientv3.Cmp) clientv3.Txn {
	t.Txn = t.Txn.If(cs...)
	return t
}

func (t *spyTxn) Then(ops ...clientv3.Op) clientv3.Txn {
	t.Txn = t.Txn.Then(ops...)
	for _, op := range ops {
		if key, _ := t.kv.failPut.Load().(string); key != "" && op.IsPut() && string(op.KeyBytes()) == key {
			t.fail = true
		}
	}
	return t
}

func (t *spyTxn) Else(ops ...clientv3.Op) clientv3.Txn {
	t.Txn = t.Txn.Else(ops...)
	return t
}

func (t *spyTxn) Commit() (*clientv3.TxnResponse, error) {
	n := t.kv.txns.Add(1)
	if from := t.kv.failFrom.Load(); t.fail || from > 0 && n >= from {
		return nil, errInjected
	}
	return t.Txn.Commit()
}

// spiedStore returns a store under namespace fenced like store, but whose
// client goes through a kvSpy counting reads under the store's task keys.
func spiedStore(t testing.TB, cli *clientv3.Client, store *Store, cfg Config) (*Store, *kvSpy) {
	t.Helper()
	spyCli := etcdtest.NewClient(t, cli.Endpoints())
	spy := &kvSpy{KV: spyCli.KV, prefix: store.keys.tasks()}
	spyCli.KV = spy
	cfg.Client, cfg.Namespace, cfg.Fence = spyCli, store.cfg.Namespace, store.cfg.Fence
	return New(cfg), spy
}
