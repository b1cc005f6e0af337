package etcdstore

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"time"
	"unicode/utf8"

	"github.com/pkg/errors"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/dataset"
	"github.com/trainmaster/master/internal/taskqueue"
)

// Format is the version of the layout this package writes. A store holding
// a newer format is refused, never overwritten.
const Format = 1

const (
	filesPerPage  = 1000
	filePageBytes = 256 << 10
	chunksPerPage = 16384
	chunkBytes    = 24
	// maxEntryErrorBytes bounds the failure reason an entry stores (the
	// queues cut reasons to 1 KiB already; the store does not rely on it),
	// so that an entry always fits a transaction with the pass key.
	maxEntryErrorBytes = 64 << 10
)

// meta is the static description of the accepted dataset.
type meta struct {
	Format        int      `json:"format"`
	Patterns      []string `json:"patterns"`
	ChunksPerTask int      `json:"chunks_per_task"`
	Files         int      `json:"files"`
	Chunks        int      `json:"chunks"`
	Tasks         int      `json:"tasks"`
	Records       int64    `json:"records"`
	// ShuffleSeed orders the tasks of each pass (dataset.Dataset's); absent:
	// file order, as before the seed existed.
	ShuffleSeed uint64 `json:"shuffle_seed,omitempty"`
	// Name is the dataset's name (absent in a store from before named
	// datasets: train), Passes the passes of a round (absent: the
	// master's -passes), Kind "range" for an index-range dataset of
	// Records in tasks of RecordsPerTask, without files or chunks (absent:
	// RecordIO files). Endless: passes without end (absent: as Passes
	// says).
	Name           string `json:"name,omitempty"`
	Passes         int    `json:"passes,omitempty"`
	Endless        bool   `json:"endless,omitempty"`
	Kind           string `json:"kind,omitempty"`
	RecordsPerTask int64  `json:"records_per_task,omitempty"`
}

// kindRange is meta.Kind of an index-range dataset.
const kindRange = "range"

// metaOf returns the meta of a dataset.
func metaOf(ds *dataset.Dataset) meta {
	m := meta{Format: Format, Patterns: ds.Patterns, ChunksPerTask: ds.ChunksPerTask,
		Files: len(ds.Files), Chunks: ds.NumChunks(), Tasks: ds.NumTasks(), Records: ds.NumRecords(), ShuffleSeed: ds.ShuffleSeed,
		Name: ds.Name, Passes: ds.Passes, Endless: ds.Endless}
	if ds.IsRange() {
		m.Kind, m.RecordsPerTask = kindRange, ds.RecordsPerTask
	}
	return m
}

// passValue is the pass key: the pass, and the round (absent: 0) of a
// dataset run again (master.Service.StartRound).
//
// Gen, GenPass, Left and Rewound are the pass state's generation
// (taskqueue's checkpoint.go), absent until a rewind: entries of another
// generation (their gen) are ignored as those of another pass are.
type passValue struct {
	Pass    int    `json:"pass"`
	Round   int    `json:"round,omitempty"`
	Gen     int    `json:"gen,omitempty"`
	GenPass int    `json:"gen_pass,omitempty"`
	Left    int64  `json:"left,omitempty"`
	Rewound string `json:"rewound,omitempty"`
	// Reserved: the highest generation a rewind may have written entries
	// of (written before them).
	Reserved int `json:"reserved,omitempty"`
}

// passValueOf is the pass key of a change committed at round.
func passValueOf(ch taskqueue.Change, round int) passValue {
	return passValue{Pass: ch.Pass, Round: round, Gen: ch.Gen.Gen, GenPass: ch.Gen.Pass, Left: ch.Gen.Left, Rewound: ch.Gen.Mark, Reserved: ch.Gen.Reserved}
}

// generation is the pass key's generation.
func (p passValue) generation() taskqueue.Generation {
	return taskqueue.Generation{Gen: p.Gen, Pass: p.GenPass, Left: p.Left, Mark: p.Rewound, Reserved: p.Reserved}
}

// entry is a task's entry as stored; times are RFC 3339 for people.
type entry struct {
	Pass       int        `json:"pass"`
	Queue      string     `json:"queue"`
	Epoch      int        `json:"epoch,omitempty"`
	Timeouts   int        `json:"timeouts,omitempty"`
	Seq        int64      `json:"seq"`
	Dispatched *time.Time `json:"dispatched,omitempty"`
	Deadline   *time.Time `json:"deadline,omitempty"`
	Error      string     `json:"error,omitempty"`
	Trainer    string     `json:"trainer,omitempty"` // pending: who holds it
	Progress   int        `json:"progress,omitempty"`
	// A piece's task and first position, and where a piece or a task cut
	// short ends (taskqueue's stragglers.go); absent for a whole task.
	Of   int `json:"of,omitempty"`
	From int `json:"from,omitempty"`
	To   int `json:"to,omitempty"`
	// For: pending, the finish its GetTask carried, so that a retry of
	// that call gets this dispatch again (taskqueue's resend.go).
	For *finished `json:"for,omitempty"`
	// Rank, Ranks and Batch: pending or done, the rank of a group whose
	// share the entry counts for (taskqueue's ranks.go); absent outside a
	// group. A rank's pending entry has no deadline.
	Rank  int `json:"rank,omitempty"`
	Ranks int `json:"ranks,omitempty"`
	Batch int `json:"batch,omitempty"`
	// Gen: the generation of the pass state it belongs to; absent: 0.
	Gen int `json:"gen,omitempty"`
}

type finished struct {
	Task  int   `json:"task"`
	Epoch int   `json:"epoch"`
	Pass  int   `json:"pass"`
	Ask   int64 `json:"ask,omitempty"` // the trainer's number of the GetTask (wire.Task.Ask)
}

var queueNames = map[string]taskqueue.Queue{
	"todo": taskqueue.Todo, "pending": taskqueue.Pending, "done": taskqueue.Done, "failed": taskqueue.Failed,
}

// encodeEntry encodes the entry of task (or piece) index, its failure
// reason cut to maxError bytes.
func encodeEntry(index int, e taskqueue.Entry, maxError int) []byte {
	v := entry{Pass: e.Pass, Queue: e.Queue.String(), Epoch: e.Epoch, Timeouts: e.Timeouts, Seq: e.Seq, Error: cutError(e.Error, maxError), Trainer: e.Trainer, Progress: e.Progress,
		From: e.From, To: e.To, Rank: e.Rank, Ranks: e.Group.Ranks, Batch: e.Group.Batch, Gen: e.Gen}
	if e.Of != index {
		v.Of = e.Of
	}
	if e.For != (taskqueue.Finished{}) {
		v.For = &finished{Task: e.For.Task, Epoch: e.For.Epoch, Pass: e.For.Pass, Ask: e.For.Ask}
	}
	if !e.Dispatched.IsZero() {
		v.Dispatched = timePtr(e.Dispatched)
	}
	if !e.Deadline.IsZero() {
		v.Deadline = timePtr(e.Deadline)
	}
	b, _ := json.Marshal(v)
	return b
}

// cutError keeps at most limit bytes of a failure reason, cut at a UTF-8
// boundary, and says how long it was.
func cutError(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s... (%d bytes, cut to %d by the store)", s[:cut], len(s), limit)
}

func timePtr(t time.Time) *time.Time {
	t = t.UTC().Truncate(time.Millisecond)
	return &t
}

func decodeEntry(b []byte) (taskqueue.Entry, error) {
	var v entry
	if err := json.Unmarshal(b, &v); err != nil {
		return taskqueue.Entry{}, err
	}
	q, ok := queueNames[v.Queue]
	if !ok {
		return taskqueue.Entry{}, errors.Errorf("unknown queue %q", v.Queue)
	}
	e := taskqueue.Entry{Pass: v.Pass, Queue: q, Epoch: v.Epoch, Timeouts: v.Timeouts, Seq: v.Seq, Error: v.Error, Trainer: v.Trainer, Progress: v.Progress,
		Of: v.Of, From: v.From, To: v.To, Rank: v.Rank, Group: wire.Group{Ranks: v.Ranks, Batch: v.Batch}, Gen: v.Gen}
	if v.For != nil {
		e.For = taskqueue.Finished{Task: v.For.Task, Epoch: v.For.Epoch, Pass: v.For.Pass, Ask: v.For.Ask}
	}
	if v.Dispatched != nil {
		e.Dispatched = *timePtr(*v.Dispatched)
	}
	if v.Deadline != nil {
		e.Deadline = *timePtr(*v.Deadline)
	}
	return e, nil
}

// filePages splits the file list into JSON arrays of at most filesPerPage
// paths and about pageBytes (filePageBytes, less under a small request
// limit); a path longer than that is a page of its own.
func filePages(files []string, pageBytes int) [][]byte {
	var pages [][]byte
	for len(files) > 0 {
		n, size := 0, 0
		for n < len(files) && n < filesPerPage && (n == 0 || size+len(files[n]) < pageBytes) {
			size += len(files[n]) + 3
			n++
		}
		page, _ := json.Marshal(files[:n])
		pages = append(pages, page)
		files = files[n:]
	}
	return pages
}

// encodeChunks packs a page of chunks and gzips it.
func encodeChunks(chunks []dataset.Chunk) []byte {
	raw := make([]byte, 0, len(chunks)*chunkBytes)
	for _, c := range chunks {
		raw = binary.LittleEndian.AppendUint64(raw, uint64(c.Offset))
		raw = binary.LittleEndian.AppendUint32(raw, uint32(c.File))
		raw = binary.LittleEndian.AppendUint32(raw, uint32(c.Idx))
		raw = binary.LittleEndian.AppendUint64(raw, uint64(c.NumRecords))
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	zw.Write(raw)
	zw.Close()
	return buf.Bytes()
}

// decodeChunks appends the chunks of a page to dst.
func decodeChunks(dst []dataset.Chunk, page []byte) ([]dataset.Chunk, error) {
	zr, err := gzip.NewReader(bytes.NewReader(page))
	if err != nil {
		return dst, errors.Wrap(err, "not a gzip page")
	}
	raw, err := io.ReadAll(io.LimitReader(zr, chunksPerPage*chunkBytes+1))
	if err != nil {
		return dst, errors.Wrap(err, "gunzip")
	}
	if len(raw)%chunkBytes != 0 || len(raw) > chunksPerPage*chunkBytes {
		return dst, errors.Errorf("page of %d bytes is not whole chunks of %d", len(raw), chunkBytes)
	}
	for ; len(raw) > 0; raw = raw[chunkBytes:] {
		dst = append(dst, dataset.Chunk{
			Offset:     int64(binary.LittleEndian.Uint64(raw)),
			File:       int32(binary.LittleEndian.Uint32(raw[8:])),
			Idx:        int32(binary.LittleEndian.Uint32(raw[12:])),
			NumRecords: int64(binary.LittleEndian.Uint64(raw[16:])),
		})
	}
	return dst, nil
}
