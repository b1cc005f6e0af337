package etcdstore

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pkg/errors"
	"github.com/sirupsen/logrus"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/trainmaster/master/internal/dataset"
	"github.com/trainmaster/master/internal/master"
	"github.com/trainmaster/master/internal/taskqueue"
)

// Limits of one transaction: etcd refuses a request of more than its
// --max-request-bytes (Config.MaxRequestBytes) and a transaction of more
// than its --max-txn-ops operations (Config.MaxTxnOps).
const (
	// DefaultMaxRequestBytes is etcd's default --max-request-bytes: 1.5 MiB.
	DefaultMaxRequestBytes = 3 << 19
	// DefaultMaxTxnOps is etcd's default --max-txn-ops.
	DefaultMaxTxnOps = 128
	// opsMargin is what the store leaves of etcd's --max-txn-ops: a
	// transaction has at most MaxTxnOps - opsMargin operations.
	opsMargin = 8
)

// txnBytesOf is the most bytes of keys, values and range ends one
// transaction of the store holds under etcd's request limit: two thirds of
// it (1 MiB at the default), the rest left for etcd's framing of each
// operation, the fence and raft's header.
func txnBytesOf(maxRequestBytes int) int { return maxRequestBytes - maxRequestBytes/3 }

// Config configures a Store.
type Config struct {
	Client    *clientv3.Client
	Namespace string       // prefix of every key, e.g. "/jobs/resnet"; may be empty
	Fence     clientv3.Cmp // holds while this master leads (election.Leadership.Fence)
	// CompactEvery compacts etcd's history, keeping the last CompactKeep
	// revisions, once this many revisions were written since the last
	// compaction; default 10,000 (negative: never).
	CompactEvery int64
	CompactKeep  int64 // default 1,000
	// MaxRequestBytes is the --max-request-bytes of the etcd the store
	// writes to: the largest request it accepts. Default
	// DefaultMaxRequestBytes (1.5 MiB), etcd's own default. The keys and
	// values of one transaction are kept to two thirds of it (1 MiB at the
	// default): a change too large for one is written in several, and
	// SaveDataset refuses, before it writes anything, a dataset whose meta
	// or a page of whose index would not fit one.
	MaxRequestBytes int
	// MaxTxnOps is the --max-txn-ops of that etcd: the most operations of
	// a transaction (DetectMaxTxnOps finds it). Default
	// DefaultMaxTxnOps, etcd's own default. A commit of the queues writes
	// at most this many entries less a few in one transaction, so the
	// larger it is, the more a commit takes of what waits.
	MaxTxnOps int
	Log       logrus.FieldLogger
}

// Store is a master.Store in etcd.
type Store struct {
	cfg         Config
	keys        keys
	maxTxnBytes int // of keys, values and range ends in one transaction
	maxOps      int // operations of one transaction

	sh *shared
}

// shared is what the stores of one Catalog share: the counters and the
// compaction of their etcd.
type shared struct {
	mu            sync.Mutex // guards lastCompacted
	lastCompacted int64
	stats         Stats
}

// Stats counts what the store did.
type Stats struct {
	Txns         atomic.Int64 // transactions committed
	BytesWritten atomic.Int64 // keys and values put
	Rejected     atomic.Int64 // fenced writes rejected (leadership lost)
}

// New returns a Store; it writes nothing until asked.
func New(cfg Config) *Store {
	return newStore(cfg.withDefaults(), rootPrefix(cfg.Namespace), &shared{})
}

// withDefaults returns cfg with its zero fields set to their defaults.
func (cfg Config) withDefaults() Config {
	if cfg.CompactEvery == 0 {
		cfg.CompactEvery = 10000
	}
	if cfg.CompactKeep == 0 {
		cfg.CompactKeep = 1000
	}
	if cfg.MaxRequestBytes <= 0 {
		cfg.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if cfg.MaxTxnOps < DefaultMaxTxnOps {
		cfg.MaxTxnOps = DefaultMaxTxnOps
	}
	if cfg.Log == nil {
		cfg.Log = logrus.StandardLogger()
	}
	return cfg
}

func newStore(cfg Config, prefix string, sh *shared) *Store {
	return &Store{cfg: cfg, keys: keys(prefix), maxTxnBytes: txnBytesOf(cfg.MaxRequestBytes), maxOps: cfg.MaxTxnOps - opsMargin, sh: sh}
}

// rootPrefix is the prefix of every dataset of a job: the keys of a
// dataset stored before named datasets existed lie right under it.
func rootPrefix(namespace string) string { return namespace + "/task_queues/" }

// Stats returns the store's counters.
func (s *Store) Stats() *Stats { return &s.sh.stats }

// keys names the store's keys under its prefix.
type keys string

func (k keys) prefix() string     { return string(k) }
func (k keys) meta() string       { return string(k) + "meta" }
func (k keys) pass() string       { return string(k) + "pass" }
func (k keys) files() string      { return string(k) + "files/" }
func (k keys) chunks() string     { return string(k) + "chunks/" }
func (k keys) tasks() string      { return string(k) + "tasks/" }
func (k keys) file(i int) string  { return fmt.Sprintf("%s%06d", k.files(), i) }
func (k keys) chunk(i int) string { return fmt.Sprintf("%s%06d", k.chunks(), i) }
func (k keys) task(i int) string  { return fmt.Sprintf("%s%010d", k.tasks(), i) }
func taskIndex(key, prefix string) (int, error) {
	return strconv.Atoi(strings.TrimPrefix(key, prefix))
}

// SaveDataset implements master.Store. It first checks that every value it
// is to write fits a transaction, and refuses a dataset that does not with
// an error wrapping master.ErrDatasetTooLarge, having written nothing.
// Then its first transaction deletes everything under the prefix (the
// state of an earlier dataset, or what an earlier save that failed half
// way wrote), the pages follow, and the last transaction writes the pass
// and the meta: a dataset without meta does not exist, and Load reads only
// the pages its meta counts.
func (s *Store) SaveDataset(ctx context.Context, ds *dataset.Dataset) error {
	tooLarge := func(what string, size int) error {
		return errors.Wrapf(master.ErrDatasetTooLarge,
			"etcdstore: %s would be %d bytes, and a transaction holds at most %d (two thirds of etcd's request limit of %d bytes, --max-request-bytes, Config.MaxRequestBytes)",
			what, size, s.maxTxnBytes, s.cfg.MaxRequestBytes)
	}
	m, err := json.Marshal(metaOf(ds))
	if err != nil {
		return errors.Wrap(err, "etcdstore: encode the dataset's meta")
	}
	pass, _ := json.Marshal(passValue{})
	last := []clientv3.Op{clientv3.OpPut(s.keys.pass(), string(pass)), clientv3.OpPut(s.keys.meta(), string(m))}
	if n := unitBytes(last); n > s.maxTxnBytes {
		return tooLarge(fmt.Sprintf("the dataset's meta %s (its %d patterns and its counts)", s.keys.meta(), len(ds.Patterns)), n)
	}
	var units [][]clientv3.Op
	for i, page := range filePages(ds.Files, min(filePageBytes, s.maxTxnBytes/2)) {
		op := clientv3.OpPut(s.keys.file(i), string(page))
		if n := opBytes(op); n > s.maxTxnBytes {
			return tooLarge(fmt.Sprintf("%s, a page of the list of %d files", s.keys.file(i), len(ds.Files)), n)
		}
		units = append(units, []clientv3.Op{op})
	}
	chunks := ds.Chunks()
	for i := 0; i*chunksPerPage < len(chunks); i++ {
		page := encodeChunks(chunks[i*chunksPerPage : min((i+1)*chunksPerPage, len(chunks))])
		op := clientv3.OpPut(s.keys.chunk(i), string(page))
		if n := opBytes(op); n > s.maxTxnBytes {
			return tooLarge(fmt.Sprintf("%s, a page of the block index", s.keys.chunk(i)), n)
		}
		units = append(units, []clientv3.Op{op})
	}
	// etcd refuses a transaction that deletes a range and puts a key in
	// it: the deletion is a transaction of its own.
	if err := s.txn(ctx, []clientv3.Op{clientv3.OpDelete(s.keys.prefix(), clientv3.WithPrefix())}); err != nil {
		return err
	}
	return s.commitUnits(ctx, append(units, last))
}

// Commit implements master.Store. A change too large for one transaction
// (Store.maxOps operations, maxTxnBytes bytes) is written in several, its
// entries in order, each transaction a state the queues could have been
// in. When the change ends a pass, the pass key is written in the same
// transaction as the last entry of the pass it ends, and the entries of
// later passes in that transaction or after it: no entry of a pass is ever
// durable while the stored pass is older (it would come to life when that
// pass ends), and Load's reader ignores the entries of other passes than
// the stored one (taskqueue.Restore). A failure reason is stored cut to
// 64 KiB (less under a small MaxRequestBytes), so that no entry is too
// large to store. The round is written with the pass, in the pass key, when
// the change moves the pass (starting a round does).
func (s *Store) Commit(ctx context.Context, round int, ch taskqueue.Change) error {
	maxError := s.maxEntryError()
	ops := make([]clientv3.Op, 0, len(ch.Records)+1)
	for _, r := range ch.Records {
		ops = append(ops, clientv3.OpPut(s.keys.task(r.Index), string(encodeEntry(r.Index, r.Entry, maxError))))
	}
	if ch.PassChanged {
		pass, _ := json.Marshal(passValueOf(ch, round))
		ops = append(ops, clientv3.OpPut(s.keys.pass(), string(pass)))
	}
	if len(ops) == 0 {
		return nil
	}
	if len(ops) <= s.maxOps && unitBytes(ops) <= s.maxTxnBytes {
		return s.txn(ctx, ops)
	}
	if !ch.PassChanged {
		units := make([][]clientv3.Op, len(ops))
		for i, op := range ops {
			units[i] = []clientv3.Op{op}
		}
		return s.commitUnits(ctx, units)
	}
	stored, err := s.storedPass(ctx, ch.Pass)
	if err != nil {
		return err
	}
	passOp := ops[len(ops)-1]
	var ending, later [][]clientv3.Op
	for i, r := range ch.Records {
		if r.Pass <= stored.Pass || r.Gen != stored.Gen {
			ending = append(ending, []clientv3.Op{ops[i]})
		} else {
			later = append(later, []clientv3.Op{ops[i]})
		}
	}
	if n := len(ending); n > 0 {
		ending[n-1] = append(ending[n-1], passOp)
	} else {
		ending = [][]clientv3.Op{{passOp}}
	}
	if ch.Gen.Gen != stored.Gen {
		// A rewind: its generation is reserved before any entry of it is
		// written, so that no later rewind takes it if this one fails.
		reserve := stored
		reserve.Reserved = max(stored.Reserved, ch.Gen.Gen)
		b, _ := json.Marshal(reserve)
		ending = append([][]clientv3.Op{{clientv3.OpPut(s.keys.pass(), string(b))}}, ending...)
	}
	return s.commitUnits(ctx, append(ending, later...))
}

// storedPass reads the pass key, for a change that moves the pass and
// takes several transactions; without one (no dataset saved), the change
// is taken to end the pass before its own. The entries of a generation
// other than the stored one (a rewind's) go before the pass key, like
// those of the passes the change ends: until it is written they are
// ignored.
func (s *Store) storedPass(ctx context.Context, changed int) (passValue, error) {
	resp, err := s.cfg.Client.Get(ctx, s.keys.pass())
	if err != nil {
		return passValue{}, errors.Wrapf(err, "etcdstore: read %s", s.keys.pass())
	}
	if len(resp.Kvs) == 0 {
		return passValue{Pass: changed - 1}, nil
	}
	var p passValue
	if err := json.Unmarshal(resp.Kvs[0].Value, &p); err != nil {
		return passValue{}, badState(s.keys.pass(), err)
	}
	return p, nil
}

// commitUnits commits units, groups of operations that must be written
// together, in order and in as few transactions as the limits allow.
func (s *Store) commitUnits(ctx context.Context, units [][]clientv3.Op) error {
	txns, err := split(units, s.maxOps, s.maxTxnBytes)
	if err != nil {
		return err
	}
	for _, ops := range txns {
		if err := s.txn(ctx, ops); err != nil {
			return err
		}
	}
	return nil
}

// split cuts units, groups of operations that must be written in one
// transaction, into transactions of at most maxOps operations and maxBytes
// bytes (opBytes), keeping their order: a transaction is closed only when
// the next unit would not fit it. A unit over either limit is an error.
func split(units [][]clientv3.Op, maxOps, maxBytes int) ([][]clientv3.Op, error) {
	var txns [][]clientv3.Op
	var cur []clientv3.Op
	curBytes := 0
	for _, u := range units {
		n := unitBytes(u)
		if len(u) > maxOps || n > maxBytes {
			return nil, errors.Errorf("etcdstore: %d operations of %d bytes cannot be one transaction (at most %d operations and %d bytes)", len(u), n, maxOps, maxBytes)
		}
		if len(cur) > 0 && (len(cur)+len(u) > maxOps || curBytes+n > maxBytes) {
			txns = append(txns, cur)
			cur, curBytes = nil, 0
		}
		cur = append(cur, u...)
		curBytes += n
	}
	if len(cur) > 0 {
		txns = append(txns, cur)
	}
	return txns, nil
}

// opBytes is what an operation counts against a transaction's bytes: its
// key, value and range end.
func opBytes(op clientv3.Op) int {
	return len(op.KeyBytes()) + len(op.ValueBytes()) + len(op.RangeBytes())
}

func unitBytes(ops []clientv3.Op) int {
	n := 0
	for _, op := range ops {
		n += opBytes(op)
	}
	return n
}

// txn commits ops if the fence holds.
func (s *Store) txn(ctx context.Context, ops []clientv3.Op) error {
	resp, err := s.cfg.Client.Txn(ctx).If(s.cfg.Fence).Then(ops...).Commit()
	if errors.Is(err, rpctypes.ErrGRPCNoSpace) || errors.Is(err, rpctypes.ErrNoSpace) {
		return errors.Wrap(err, "etcdstore: etcd is out of space (NOSPACE alarm); nothing was written. "+
			"Free space (compact, then etcdctl defrag), raise --quota-backend-bytes if needed, "+
			"and run etcdctl alarm disarm; the master serves again at the next call")
	}
	if err != nil {
		return errors.Wrap(err, "etcdstore: commit")
	}
	if !resp.Succeeded {
		s.sh.stats.Rejected.Add(1)
		return errors.Wrap(master.ErrLeadershipLost, "etcdstore: fenced write rejected: this master's lock key is gone or was re-created")
	}
	s.sh.stats.Txns.Add(1)
	for _, op := range ops {
		s.sh.stats.BytesWritten.Add(int64(len(op.KeyBytes()) + len(op.ValueBytes())))
	}
	s.maybeCompact(resp.Header.Revision)
	return nil
}

// maybeCompact compacts history in the background once enough revisions
// have accumulated. Compaction is not fenced: a deposed master compacting
// old revisions harms nobody.
func (s *Store) maybeCompact(rev int64) {
	if s.cfg.CompactEvery < 0 {
		return
	}
	s.sh.mu.Lock()
	defer s.sh.mu.Unlock()
	if s.sh.lastCompacted == 0 {
		s.sh.lastCompacted = rev
		return
	}
	if rev-s.sh.lastCompacted < s.cfg.CompactEvery || rev <= s.cfg.CompactKeep {
		return
	}
	s.sh.lastCompacted = rev
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := s.cfg.Client.Compact(ctx, rev-s.cfg.CompactKeep); err != nil {
			s.cfg.Log.WithError(err).Warn("etcd compaction failed")
		}
	}()
}
