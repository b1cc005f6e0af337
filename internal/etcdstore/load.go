package etcdstore

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/pkg/errors"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/trainmaster/master/internal/dataset"
	"github.com/trainmaster/master/internal/master"
	"github.com/trainmaster/master/internal/taskqueue"
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
	records, err := s.loadEntries(ctx, m.Tasks, rev)
	if err != nil {
		return nil, err
	}
	snap.Entries = taskqueue.Stored(records)
	return snap, nil
}

// Task entries are read in ranges of entriesPerRead task indices (about
// 200 bytes each), by up to readers reads at a time.
const (
	entriesPerRead = 2048
	readers        = 4
)

// loadEntries reads the task entries. A range read with a limit is no
// answer for a million keys: etcd counts every key to the end of the range
// on each read, which made a million entries take minutes to load. Keys
// outside the task range or not named like a task are reported, not
// skipped.
func (s *Store) loadEntries(ctx context.Context, tasks int, rev int64) ([]taskqueue.Record, error) {
	bounds := []string{s.keys.tasks()}
	for i := 0; i < tasks; i += entriesPerRead {
		bounds = append(bounds, s.keys.task(i))
	}
	bounds = append(bounds, s.keys.task(tasks), clientv3.GetPrefixRangeEnd(s.keys.tasks()))
	parts := make([][]taskqueue.Record, len(bounds)-1)
	errs := make([]error, len(parts))
	next := make(chan int, len(parts))
	for i := range parts {
		next <- i
	}
	close(next)
	var wg sync.WaitGroup
	for range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				parts[i], errs[i] = s.readEntries(ctx, bounds[i], bounds[i+1], tasks, rev)
			}
		}()
	}
	wg.Wait()
	var records []taskqueue.Record
	for i, part := range parts {
		if errs[i] != nil {
			return nil, errors.Wrapf(errs[i], "etcdstore: read %s", s.keys.tasks())
		}
		records = append(records, part...)
	}
	return records, nil
}

// readEntries reads the task entries with keys in [from, end).
func (s *Store) readEntries(ctx context.Context, from, end string, tasks int, rev int64) ([]taskqueue.Record, error) {
	var records []taskqueue.Record
	err := s.scanRange(ctx, from, end, rev, func(kv *mvccpb.KeyValue) error {
		i, err := taskIndex(string(kv.Key), s.keys.tasks())
		if err != nil || i < 0 || i >= tasks || string(kv.Key) != s.keys.task(i) {
			return fmt.Errorf("%s: not a task of the %d", kv.Key, tasks)
		}
		e, err := decodeEntry(kv.Value)
		if err != nil {
			return fmt.Errorf("%s: %v", kv.Key, err)
		}
		records = append(records, taskqueue.Record{Index: i, Entry: e})
		return nil
	})
	return records, err
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
	return errors.Wrapf(s.scanRange(ctx, prefix, clientv3.GetPrefixRangeEnd(prefix), rev, fn), "etcdstore: read %s", prefix)
}

// scanRange calls fn for every key in [from, end) at revision rev, in key
// order, 512 keys per read.
func (s *Store) scanRange(ctx context.Context, from, end string, rev int64, fn func(*mvccpb.KeyValue) error) error {
	for key := from; key < end; {
		resp, err := s.cfg.Client.Get(ctx, key, clientv3.WithRange(end), clientv3.WithRev(rev), clientv3.WithLimit(512))
		if err != nil {
			return err
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
	return nil
}
