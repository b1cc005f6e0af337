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

// Limits of one transaction, under etcd's defaults of 128 operations and
// 1.5 MiB per request.
const (
	maxOps      = 120
	maxTxnBytes = 1 << 20
)

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
	Log          logrus.FieldLogger
}

// Store is a master.Store in etcd.
type Store struct {
	cfg  Config
	keys keys

	mu            sync.Mutex
	lastCompacted int64

	stats Stats
}

// Stats counts what the store did.
type Stats struct {
	Txns         atomic.Int64 // transactions committed
	BytesWritten atomic.Int64 // keys and values put
	Rejected     atomic.Int64 // fenced writes rejected (leadership lost)
}

// New returns a Store; it writes nothing until asked.
func New(cfg Config) *Store {
	if cfg.CompactEvery == 0 {
		cfg.CompactEvery = 10000
	}
	if cfg.CompactKeep == 0 {
		cfg.CompactKeep = 1000
	}
	if cfg.Log == nil {
		cfg.Log = logrus.StandardLogger()
	}
	return &Store{cfg: cfg, keys: keys(cfg.Namespace + "/task_queues/")}
}

// Stats returns the store's counters.
func (s *Store) Stats() *Stats { return &s.stats }

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

// SaveDataset implements master.Store: pages first, then meta and the pass,
// clearing the entries of any earlier dataset, in one transaction.
func (s *Store) SaveDataset(ctx context.Context, ds *dataset.Dataset) error {
	var batch []clientv3.Op
	batchBytes := 0
	flush := func() error {
		err := s.txn(ctx, batch)
		batch, batchBytes = batch[:0], 0
		return err
	}
	add := func(op clientv3.Op, size int) error {
		if len(batch) > 0 && (batchBytes+size > maxTxnBytes || len(batch) == maxOps) {
			if err := flush(); err != nil {
				return err
			}
		}
		batch, batchBytes = append(batch, op), batchBytes+size
		return nil
	}
	for i, page := range filePages(ds.Files) {
		if err := add(clientv3.OpPut(s.keys.file(i), string(page)), len(page)); err != nil {
			return err
		}
	}
	chunks := ds.Chunks()
	for i := 0; i*chunksPerPage < len(chunks); i++ {
		page := encodeChunks(chunks[i*chunksPerPage : min((i+1)*chunksPerPage, len(chunks))])
		if err := add(clientv3.OpPut(s.keys.chunk(i), string(page)), len(page)); err != nil {
			return err
		}
	}
	if len(batch) > 0 {
		if err := flush(); err != nil {
			return err
		}
	}
	m, _ := json.Marshal(meta{Format: Format, Patterns: ds.Patterns, ChunksPerTask: ds.ChunksPerTask,
		Files: len(ds.Files), Chunks: ds.NumChunks(), Tasks: ds.NumTasks(), Records: ds.NumRecords()})
	pass, _ := json.Marshal(passValue{})
	return s.txn(ctx, []clientv3.Op{
		clientv3.OpDelete(s.keys.tasks(), clientv3.WithPrefix()),
		clientv3.OpPut(s.keys.pass(), string(pass)),
		clientv3.OpPut(s.keys.meta(), string(m)),
	})
}

// Commit implements master.Store. A change of more entries than one
// transaction holds is written in several, the pass last; each is a state
// the queues could have been in.
func (s *Store) Commit(ctx context.Context, ch taskqueue.Change) error {
	ops := make([]clientv3.Op, 0, len(ch.Records)+1)
	for _, r := range ch.Records {
		ops = append(ops, clientv3.OpPut(s.keys.task(r.Index), string(encodeEntry(r.Entry))))
	}
	if ch.PassChanged {
		pass, _ := json.Marshal(passValue{Pass: ch.Pass})
		ops = append(ops, clientv3.OpPut(s.keys.pass(), string(pass)))
	}
	for len(ops) > 0 {
		n := min(len(ops), maxOps)
		if err := s.txn(ctx, ops[:n]); err != nil {
			return err
		}
		ops = ops[n:]
	}
	return nil
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
		s.stats.Rejected.Add(1)
		return errors.Wrap(master.ErrLeadershipLost, "etcdstore: fenced write rejected: this master's lock key is gone or was re-created")
	}
	s.stats.Txns.Add(1)
	for _, op := range ops {
		s.stats.BytesWritten.Add(int64(len(op.KeyBytes()) + len(op.ValueBytes())))
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
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lastCompacted == 0 {
		s.lastCompacted = rev
		return
	}
	if rev-s.lastCompacted < s.cfg.CompactEvery || rev <= s.cfg.CompactKeep {
		return
	}
	s.lastCompacted = rev
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := s.cfg.Client.Compact(ctx, rev-s.cfg.CompactKeep); err != nil {
			s.cfg.Log.WithError(err).Warn("etcd compaction failed")
		}
	}()
}
