package etcdstore

import (
	"context"
	"encoding/json"
	"iter"
	"math"
	"sync"

	"github.com/pkg/errors"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/dataset"
	"github.com/trainmaster/master/internal/master"
	"github.com/trainmaster/master/internal/taskqueue"
)

// Reads: task entries in ranges of entriesPerRead task indices (about 200
// bytes each), up to readers ranges in flight ahead of the one being
// yielded, entriesPerGet keys a request; pages of the file list and block
// index pagesPerGet a request (each is up to 256 or about 400 KiB).
const (
	entriesPerRead = 2048
	readers        = 4
	entriesPerGet  = 512
	pagesPerGet    = 8
	// maxPages is the most pages of a kind the six-digit page keys name.
	maxPages = 1000000
)

// Load implements master.Store. It reads the meta, the pages the meta
// counts and the pass at the revision of the meta, so the state is
// consistent, and checks that they agree; the entries are read at that
// revision too, as Snapshot.Entries is ranged over, and each is checked
// (taskqueue.CheckRecord). Whatever does not decode or agree is refused
// with an error wrapping ErrFormat that names its key.
func (s *Store) Load(ctx context.Context) (*master.Snapshot, error) {
	resp, err := s.cfg.Client.Get(ctx, s.keys.meta())
	if err != nil {
		return nil, errors.Wrapf(err, "etcdstore: read %s", s.keys.meta())
	}
	if len(resp.Kvs) == 0 {
		return &master.Snapshot{}, nil
	}
	rev := resp.Header.Revision // every later read is of this revision: one consistent state
	m, err := s.decodeMeta(resp.Kvs[0].Value)
	if err != nil {
		return nil, err
	}
	ds, err := s.loadDataset(ctx, m, rev)
	if err != nil {
		return nil, err
	}
	pass, err := s.loadPass(ctx, rev)
	if err != nil {
		return nil, err
	}
	return &master.Snapshot{Dataset: ds, Pass: pass.Pass, Round: pass.Round, Gen: pass.generation(), Entries: s.entries(ctx, m.Tasks, rev)}, nil
}

// decodeMeta decodes the meta and checks that its counts agree with each
// other; loadDataset checks them against the pages.
func (s *Store) decodeMeta(b []byte) (meta, error) {
	key := s.keys.meta()
	var m meta
	if err := json.Unmarshal(b, &m); err != nil {
		return m, badState(key, err)
	}
	switch {
	case m.Format != Format:
		return m, badStatef(key, "holds format %d; this master reads format %d only (a newer master wrote it?)", m.Format, Format)
	case m.Passes < 0:
		return m, badStatef(key, "passes %d", m.Passes)
	case m.Endless && m.Passes != 0:
		return m, badStatef(key, "passes %d and endless", m.Passes)
	case m.Kind == kindRange:
		return m, s.checkRangeMeta(m)
	case m.Kind != "":
		return m, badStatef(key, "kind %q (want %q or none)", m.Kind, kindRange)
	case m.ChunksPerTask <= 0:
		return m, badStatef(key, "chunks_per_task %d (want at least 1)", m.ChunksPerTask)
	case m.Files <= 0 || m.Files > maxPages*filesPerPage:
		return m, badStatef(key, "files %d (want 1 to %d)", m.Files, maxPages*filesPerPage)
	case m.Chunks <= 0 || m.Chunks > maxPages*chunksPerPage:
		return m, badStatef(key, "chunks %d (want 1 to %d)", m.Chunks, maxPages*chunksPerPage)
	case m.Records < 0:
		return m, badStatef(key, "records %d", m.Records)
	}
	if tasks := ceilDiv(m.Chunks, m.ChunksPerTask); m.Tasks != tasks {
		return m, badStatef(key, "tasks %d, but %d chunks in tasks of %d make %d", m.Tasks, m.Chunks, m.ChunksPerTask, tasks)
	}
	return m, nil
}

// checkRangeMeta checks the meta of an index-range dataset.
func (s *Store) checkRangeMeta(m meta) error {
	key := s.keys.meta()
	if m.Files != 0 || m.Chunks != 0 || len(m.Patterns) != 0 {
		return badStatef(key, "an index-range dataset with %d patterns, %d files and %d chunks (want none)", len(m.Patterns), m.Files, m.Chunks)
	}
	ds, err := dataset.NewRange(m.Records, m.RecordsPerTask)
	if err != nil {
		return badState(key, err)
	}
	if ds.NumTasks() != m.Tasks {
		return badStatef(key, "tasks %d, but %d records in tasks of %d make %d", m.Tasks, m.Records, m.RecordsPerTask, ds.NumTasks())
	}
	return nil
}

func ceilDiv(a, b int) int {
	q := a / b
	if a%b != 0 {
		q++
	}
	return q
}

func (s *Store) loadPass(ctx context.Context, rev int64) (passValue, error) {
	key := s.keys.pass()
	var p passValue
	resp, err := s.cfg.Client.Get(ctx, key, clientv3.WithRev(rev))
	if err != nil {
		return p, errors.Wrapf(err, "etcdstore: read %s", key)
	}
	if len(resp.Kvs) == 0 {
		return p, badStatef(key, "missing")
	}
	if err := json.Unmarshal(resp.Kvs[0].Value, &p); err != nil {
		return p, badState(key, err)
	}
	if p.Pass < 0 || p.Pass > math.MaxInt32 || p.Round < 0 || p.Round > math.MaxInt32 {
		return p, badStatef(key, "pass %d, round %d (want 0 to %d)", p.Pass, p.Round, math.MaxInt32)
	}
	if p.Gen < 0 || p.GenPass < 0 || p.Left < 0 || p.Reserved < 0 || len(p.Rewound) > 2*wire.MaxCheckpointNameBytes+24 {
		return p, badStatef(key, "generation %d of pass %d with %d records left, rewound %d bytes", p.Gen, p.GenPass, p.Left, len(p.Rewound))
	}
	return p, nil
}

// loadDataset reads the pages the meta counts, and no others: pages past
// them (there should be none, see SaveDataset) are never read into the
// dataset.
func (s *Store) loadDataset(ctx context.Context, m meta, rev int64) (*dataset.Dataset, error) {
	if m.Kind == kindRange {
		ds, err := dataset.NewRange(m.Records, m.RecordsPerTask) // checked by decodeMeta
		if err != nil {
			return nil, badState(s.keys.meta(), err)
		}
		ds.ShuffleSeed, ds.Name, ds.Passes, ds.Endless = m.ShuffleSeed, m.Name, m.Passes, m.Endless
		return ds, nil
	}
	files, err := s.loadFiles(ctx, m.Files, rev)
	if err != nil {
		return nil, err
	}
	chunks, err := s.loadChunks(ctx, m, rev)
	if err != nil {
		return nil, err
	}
	var records int64
	for _, c := range chunks {
		if records > math.MaxInt64-c.NumRecords {
			return nil, badStatef(s.keys.chunks(), "the chunks hold more than %d records", int64(math.MaxInt64))
		}
		records += c.NumRecords
	}
	if records != m.Records {
		return nil, badStatef(s.keys.meta(), "records %d, but the chunks hold %d", m.Records, records)
	}
	ds, err := dataset.Restore(m.Patterns, files, m.ChunksPerTask, chunks)
	if err != nil {
		return nil, badState(s.keys.meta(), err)
	}
	ds.ShuffleSeed, ds.Name, ds.Passes, ds.Endless = m.ShuffleSeed, m.Name, m.Passes, m.Endless
	return ds, nil
}

// errEnough ends a scan that has read what it needs.
var errEnough = errors.New("etcdstore: scan done")

// loadFiles reads pages of the file list in order, from the first, until
// they hold the want files of the meta.
func (s *Store) loadFiles(ctx context.Context, want int, rev int64) ([]string, error) {
	var files []string
	page := 0
	err := s.scanRange(ctx, s.keys.file(0), clientv3.GetPrefixRangeEnd(s.keys.files()), rev, pagesPerGet, func(kv *mvccpb.KeyValue) error {
		key := string(kv.Key)
		if key != s.keys.file(page) {
			return badStatef(key, "found where page %s of the file list should be", s.keys.file(page))
		}
		var names []string
		if err := json.Unmarshal(kv.Value, &names); err != nil {
			return badState(key, err)
		}
		if len(names) == 0 || len(files)+len(names) > want {
			return badStatef(key, "holds %d files after the %d of the pages before; the meta counts %d", len(names), len(files), want)
		}
		files = append(files, names...)
		page++
		if len(files) == want {
			return errEnough
		}
		return nil
	})
	if err != nil && !errors.Is(err, errEnough) {
		return nil, err
	}
	if len(files) != want {
		return nil, badStatef(s.keys.file(page), "missing: the pages before hold %d files; the meta counts %d", len(files), want)
	}
	return files, nil
}

// loadChunks reads the pages of the block index the meta's count of chunks
// makes, each full but the last, and checks every chunk.
func (s *Store) loadChunks(ctx context.Context, m meta, rev int64) ([]dataset.Chunk, error) {
	pages := ceilDiv(m.Chunks, chunksPerPage)
	first, end := s.keys.chunk(0), s.keys.chunk(pages)
	// Count the pages before making room for the chunks the meta counts.
	resp, err := s.cfg.Client.Get(ctx, first, clientv3.WithRange(end), clientv3.WithRev(rev), clientv3.WithCountOnly())
	if err != nil {
		return nil, errors.Wrapf(err, "etcdstore: read %s", s.keys.chunks())
	}
	if resp.Count != int64(pages) {
		return nil, badStatef(s.keys.meta(), "chunks %d make %d pages, but %d keys lie from %s to %s", m.Chunks, pages, resp.Count, first, end)
	}
	chunks := make([]dataset.Chunk, 0, m.Chunks)
	page := 0
	err = s.scanRange(ctx, first, end, rev, pagesPerGet, func(kv *mvccpb.KeyValue) error {
		key := string(kv.Key)
		if key != s.keys.chunk(page) {
			return badStatef(key, "found where page %s of the block index should be", s.keys.chunk(page))
		}
		from := page * chunksPerPage
		var err error
		if chunks, err = decodeChunks(chunks, kv.Value); err != nil {
			return badState(key, err)
		}
		if want := min(chunksPerPage, m.Chunks-from); len(chunks)-from != want {
			return badStatef(key, "holds %d chunks; the meta's %d chunks make it hold %d", len(chunks)-from, m.Chunks, want)
		}
		for i, c := range chunks[from:] {
			if c.File < 0 || int(c.File) >= m.Files || c.Idx < 0 || c.Offset < 0 || c.NumRecords < 0 {
				return badStatef(key, "chunk %d (file %d, chunk %d of it, offset %d, %d records) does not fit the meta's %d files",
					from+i, c.File, c.Idx, c.Offset, c.NumRecords, m.Files)
			}
		}
		page++
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(chunks) != m.Chunks {
		return nil, badStatef(s.keys.chunk(page), "missing: the pages before hold %d chunks; the meta counts %d", len(chunks), m.Chunks)
	}
	return chunks, nil
}

// entries yields the task entries at revision rev as they are taken: the
// key range is read in parts of entriesPerRead tasks, readers parts in
// flight ahead of the one being yielded, so that no more than about
// (readers+1) × entriesPerRead entries are held at once. The parts before
// the first task and after the last hold no task; a key in them, or a key
// not named like a task, is refused by name. Stopping the range stops the
// reads.
func (s *Store) entries(ctx context.Context, tasks int, rev int64) iter.Seq2[taskqueue.Record, error] {
	return func(yield func(taskqueue.Record, error) bool) {
		entries := tasks + taskqueue.MaxPieces(tasks) // the tasks', then the pieces'
		bounds := []string{s.keys.tasks()}
		for i := 0; i < entries; i += entriesPerRead {
			bounds = append(bounds, s.keys.task(i))
		}
		bounds = append(bounds, s.keys.task(entries), clientv3.GetPrefixRangeEnd(s.keys.tasks()))
		parts := len(bounds) - 1

		ctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		defer func() {
			cancel()
			wg.Wait()
		}()
		type part struct {
			records []taskqueue.Record
			err     error
		}
		results := make([]chan part, parts)
		read := func(i int) {
			done := make(chan part, 1)
			results[i] = done
			wg.Add(1)
			go func() {
				defer wg.Done()
				records, err := s.readEntries(ctx, bounds[i], bounds[i+1], tasks, rev)
				done <- part{records, err}
			}()
		}
		for i := range min(readers, parts) {
			read(i)
		}
		for i := range parts {
			p := <-results[i]
			results[i] = nil
			if i+readers < parts {
				read(i + readers)
			}
			if p.err != nil {
				yield(taskqueue.Record{}, p.err)
				return
			}
			for _, r := range p.records {
				if !yield(r, nil) {
					return
				}
			}
		}
	}
}

// readEntries reads and checks the task entries with keys in [from, end).
func (s *Store) readEntries(ctx context.Context, from, end string, tasks int, rev int64) ([]taskqueue.Record, error) {
	var records []taskqueue.Record
	err := s.scanRange(ctx, from, end, rev, entriesPerGet, func(kv *mvccpb.KeyValue) error {
		key := string(kv.Key)
		i, err := taskIndex(key, s.keys.tasks())
		if err != nil || i < 0 || i >= tasks+taskqueue.MaxPieces(tasks) || key != s.keys.task(i) {
			return badStatef(key, "not a task of the %d, nor one of the %d pieces a pass may have", tasks, taskqueue.MaxPieces(tasks))
		}
		e, err := decodeEntry(kv.Value)
		if err != nil {
			return badState(key, err)
		}
		r := taskqueue.Record{Index: i, Entry: e}
		if err := taskqueue.CheckRecord(r, tasks); err != nil {
			return badState(key, err)
		}
		records = append(records, r)
		return nil
	})
	return records, err
}

// scanRange calls fn for every key in [from, end) at revision rev, in key
// order, limit keys a read, until fn returns an error, which it returns as
// it is.
func (s *Store) scanRange(ctx context.Context, from, end string, rev, limit int64, fn func(*mvccpb.KeyValue) error) error {
	for key := from; key < end; {
		resp, err := s.cfg.Client.Get(ctx, key, clientv3.WithRange(end), clientv3.WithRev(rev), clientv3.WithLimit(limit))
		if err != nil {
			return errors.Wrapf(err, "etcdstore: read %s to %s", key, end)
		}
		for _, kv := range resp.Kvs {
			if err := fn(kv); err != nil {
				return err
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return nil
		}
		key = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
	return nil
}
