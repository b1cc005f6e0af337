package dataset

import (
	"slices"

	"github.com/pkg/errors"
	"github.com/trainmaster/master/go/recordio"
	"github.com/trainmaster/master/go/wire"
)

// Chunk is one entry of the block index: 24 bytes per chunk, whatever the
// size of its file's index.
type Chunk struct {
	Offset     int64
	File       int32 // index into Dataset.Files
	Idx        int32 // chunk number within the file
	NumRecords int64
}

// Dataset is the block index of a dataset and its division into tasks: task
// i is chunks [i*ChunksPerTask, (i+1)*ChunksPerTask) of all files in order,
// the last task possibly smaller; or, for an index-range dataset (NewRange),
// a range of record indexes. It is immutable once built.
type Dataset struct {
	// Name is the dataset's name in its job (wire.Dataset.Name), and Passes
	// the passes of one of its rounds, 0 for the master's -passes; the
	// master sets both when it accepts the dataset, and Endless when its
	// passes have no end (declared so, or by the master's -passes 0).
	Name    string
	Passes  int
	Endless bool
	// RecordsPerTask, for an index-range dataset (range.go), is the
	// records of a task; 0 for RecordIO files.
	RecordsPerTask int64
	Patterns       []string // as reported, in the order given
	Files          []string // expanded, sorted, without duplicates
	ChunksPerTask  int
	// ShuffleSeed is the job's seed of its tasks' order (the master's
	// -shuffle-seed), stored with the dataset so that a master that takes
	// over continues the same order: 0 means file order. The master sets
	// it when it accepts the dataset, before anything else sees it.
	ShuffleSeed uint64
	chunks      []Chunk
	records     int64
}

// Build is BuildWith with the zero Config: no root, the default limits.
func Build(patterns []string, chunksPerTask int) (*Dataset, error) {
	return BuildWith(Config{}, patterns, chunksPerTask)
}

// BuildWith expands the patterns with ExpandWith(cfg, patterns) and indexes
// every file by header scan, several files at a time (see defaultWorkers),
// each opened with recordio.OpenFile (through the root with cfg.Root), so
// no open blocks and only regular files are indexed. The result, and the
// error when a file cannot be indexed, are those of indexing the files one
// by one in order.
func BuildWith(cfg Config, patterns []string, chunksPerTask int) (*Dataset, error) {
	return build(cfg, patterns, chunksPerTask, defaultWorkers())
}

// build is BuildWith with the number of workers as a parameter, for tests
// and benchmarks to compare with a sequential scan.
func build(cfg Config, patterns []string, chunksPerTask, workers int) (*Dataset, error) {
	if chunksPerTask <= 0 {
		return nil, errors.Errorf("dataset: chunks per task must be positive, not %d", chunksPerTask)
	}
	e, err := newExpansion(cfg)
	if err != nil {
		return nil, err
	}
	defer e.close()
	files, err := e.expand(patterns)
	if err != nil {
		return nil, err
	}
	ds := &Dataset{Patterns: slices.Clone(patterns), Files: files, ChunksPerTask: chunksPerTask}
	index := func(i int) (*recordio.Index, error) { return e.index(files, i) }
	if err := indexFiles(len(files), workers, index, ds.add); err != nil {
		return nil, errors.WithMessage(err, "dataset")
	}
	if len(ds.chunks) == 0 {
		return nil, errors.Errorf("dataset: %d files matching %s hold no chunk", len(files), describe(patterns))
	}
	return ds, nil
}

// add appends the chunks of file fi, indexed as ix, to the block index. Only
// this compact form is kept: ix is dropped as soon as it is added.
func (d *Dataset) add(fi int, ix *recordio.Index) {
	for ci, c := range ix.Chunks {
		d.chunks = append(d.chunks, Chunk{Offset: c.Offset, File: int32(fi), Idx: int32(ci), NumRecords: int64(c.NumRecords)})
		d.records += int64(c.NumRecords)
	}
}

// NumChunks returns the number of chunks in the dataset.
func (d *Dataset) NumChunks() int { return len(d.chunks) }

// NumRecords returns the number of records in the dataset.
func (d *Dataset) NumRecords() int64 { return d.records }

// NumTasks returns the number of tasks the chunks are grouped into.
func (d *Dataset) NumTasks() int {
	if d.IsRange() {
		return int((d.records + d.RecordsPerTask - 1) / d.RecordsPerTask)
	}
	return (len(d.chunks) + d.ChunksPerTask - 1) / d.ChunksPerTask
}

func (d *Dataset) taskChunks(task int) []Chunk {
	from := task * d.ChunksPerTask
	return d.chunks[from:min(from+d.ChunksPerTask, len(d.chunks))]
}

// Blocks returns the blocks of a task, built on demand: none for an
// index-range dataset.
func (d *Dataset) Blocks(task int) []wire.Block {
	if d.IsRange() {
		return nil
	}
	cs := d.taskChunks(task)
	blocks := make([]wire.Block, len(cs))
	for i, c := range cs {
		blocks[i] = wire.Block{Path: d.Files[c.File], Idx: int(c.Idx), Offset: c.Offset, NumRecords: int(c.NumRecords)}
	}
	return blocks
}

// TaskRecords returns the number of records of a task.
func (d *Dataset) TaskRecords(task int) int64 {
	if d.IsRange() {
		start, end := d.Range(task)
		return end - start
	}
	var n int64
	for _, c := range d.taskChunks(task) {
		n += c.NumRecords
	}
	return n
}

// Chunks returns the block index; callers must not modify it.
func (d *Dataset) Chunks() []Chunk { return d.chunks }

// Restore rebuilds a dataset from its parts, as a store saved them, checking
// that they agree.
func Restore(patterns, files []string, chunksPerTask int, chunks []Chunk) (*Dataset, error) {
	if chunksPerTask <= 0 || len(chunks) == 0 {
		return nil, errors.Errorf("dataset: cannot restore %d chunks in tasks of %d", len(chunks), chunksPerTask)
	}
	ds := &Dataset{Patterns: patterns, Files: files, ChunksPerTask: chunksPerTask, chunks: chunks}
	for i, c := range chunks {
		if c.File < 0 || int(c.File) >= len(files) || c.Idx < 0 || c.Offset < 0 || c.NumRecords < 0 {
			return nil, errors.Errorf("dataset: stored chunk %d %+v does not fit %d files", i, c, len(files))
		}
		ds.records += c.NumRecords
	}
	return ds, nil
}
