package etcdstore

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/pkg/errors"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/trainmaster/master/go/dataset"
	"github.com/trainmaster/master/go/master"
	"github.com/trainmaster/master/go/taskqueue"
)

// ErrFormat is wrapped by Load when the stored state is of an unknown
// format or does not decode: the master refuses to start on it rather than
// overwrite it.
var ErrFormat = errors.New("etcdstore: stored state not understood")

// Load implements master.Store.
func (s *Store) Load(ctx context.Context) (*master.Snapshot, error) {
	resp, err := s.cfg.Client.Get(ctx, s.keys.meta())
	if err != nil {
		return nil, errors.Wrapf(err, "etcdstore: read %s", s.keys.meta())
	}
	if len(resp.Kvs) == 0 {
		return &master.Snapshot{}, nil
	}
	rev := resp.Header.Revision // every later read is of this revision: one consistent state
	var m meta
	if err := json.Unmarshal(resp.Kvs[0].Value, &m); err != nil {
		return nil, errors.Wrapf(ErrFormat, "%s: %v", s.keys.meta(), err)
	}
	if m.Format != Format {
		return nil, errors.Wrapf(ErrFormat, "%s holds format %d; this master reads format %d only (a newer master wrote it?)", s.keys.meta(), m.Format, Format)
	}
	ds, err := s.loadDataset(ctx, m, rev)
	if err != nil {
		return nil, err
	}
	snap := &master.Snapshot{Dataset: ds}
	if snap.Pass, err = s.loadPass(ctx, rev); err != nil {
		return nil, err
	}
	err = s.scan(ctx, s.keys.tasks(), rev, func(kv *mvccpb.KeyValue) error {
		i, err := taskIndex(string(kv.Key), s.keys.tasks())
		if err != nil || i < 0 || i >= m.Tasks {
			return fmt.Errorf("%s: not a task of the %d", kv.Key, m.Tasks)
		}
		e, err := decodeEntry(kv.Value)
		if err != nil {
			return fmt.Errorf("%s: %v", kv.Key, err)
		}
		snap.Records = append(snap.Records, taskqueue.Record{Index: i, Entry: e})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return snap, nil
}

func (s *Store) loadPass(ctx context.Context, rev int64) (int, error) {
	resp, err := s.cfg.Client.Get(ctx, s.keys.pass(), clientv3.WithRev(rev))
	if err != nil {
		return 0, errors.Wrapf(err, "etcdstore: read %s", s.keys.pass())
	}
	var p passValue
	if len(resp.Kvs) == 0 {
		return 0, errors.Wrapf(ErrFormat, "%s missing", s.keys.pass())
	}
	if err := json.Unmarshal(resp.Kvs[0].Value, &p); err != nil {
		return 0, errors.Wrapf(ErrFormat, "%s: %v", s.keys.pass(), err)
	}
	return p.Pass, nil
}

func (s *Store) loadDataset(ctx context.Context, m meta, rev int64) (*dataset.Dataset, error) {
	files := make([]string, 0, m.Files)
	err := s.scan(ctx, s.keys.files(), rev, func(kv *mvccpb.KeyValue) error {
		var page []string
		if err := json.Unmarshal(kv.Value, &page); err != nil {
			return fmt.Errorf("%s: %v", kv.Key, err)
		}
		files = append(files, page...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	chunks := make([]dataset.Chunk, 0, m.Chunks)
	err = s.scan(ctx, s.keys.chunks(), rev, func(kv *mvccpb.KeyValue) error {
		var err error
		if chunks, err = decodeChunks(chunks, kv.Value); err != nil {
			return fmt.Errorf("%s: %v", kv.Key, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(files) != m.Files || len(chunks) != m.Chunks {
		return nil, errors.Wrapf(ErrFormat, "meta says %d files and %d chunks, pages hold %d and %d", m.Files, m.Chunks, len(files), len(chunks))
	}
	ds, err := dataset.Restore(m.Patterns, files, m.ChunksPerTask, chunks)
	if err != nil {
		return nil, errors.Wrap(ErrFormat, err.Error())
	}
	return ds, nil
}

// scan calls fn for every key under prefix at revision rev, in key order,
// a page at a time so that no response is large.
func (s *Store) scan(ctx context.Context, prefix string, rev int64, fn func(*mvccpb.KeyValue) error) error {
	end := clientv3.GetPrefixRangeEnd(prefix)
	for key := prefix; ; {
		resp, err := s.cfg.Client.Get(ctx, key, clientv3.WithRange(end), clientv3.WithRev(rev), clientv3.WithLimit(512))
		if err != nil {
			return errors.Wrapf(err, "etcdstore: read %s", prefix)
		}
		for _, kv := range resp.Kvs {
			if err := fn(kv); err != nil {
				return errors.Wrap(ErrFormat, err.Error())
			}
		}
		if !resp.More {
			return nil
		}
		key = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}
