package client

import (
	"math"
	"slices"
	"sort"

	"github.com/pkg/errors"
)

// Files maps the record indexes of an index-range dataset to files whose
// record counts the trainer knows: the dataset's records are the files'
// records one file after the other, in the order given, so that index i is
// record i-s of the file whose records start at index s. It is how a
// trainer that keeps its records in files of its own format reads a task
// (Record.Index, wire.Task.Start and End). A Files is safe for concurrent
// use: it never changes.
type Files struct {
	paths []string
	ends  []int64 // ends[i]: the index past the last record of file i
}

// Span is a run of a file's records: records From to To-1 of the file
// Path, counted from 0 in the file.
type Span struct {
	Path     string
	From, To int64
}

// NewFiles returns the Files of paths, whose files hold records[i] records
// each. It refuses lists of different lengths, a negative count and a
// total past the largest int64, naming the file at fault.
func NewFiles(paths []string, records []int64) (*Files, error) {
	if len(paths) != len(records) {
		return nil, errors.Errorf("client: %d files and %d record counts", len(paths), len(records))
	}
	f := &Files{paths: slices.Clone(paths), ends: make([]int64, len(paths))}
	var total int64
	for i, n := range records {
		switch {
		case n < 0:
			return nil, errors.Errorf("client: file %q (#%d) holds %d records", paths[i], i, n)
		case n > math.MaxInt64-total:
			return nil, errors.Errorf("client: file %q (#%d) takes the records past %d", paths[i], i, int64(math.MaxInt64))
		}
		total += n
		f.ends[i] = total
	}
	return f, nil
}

// Records returns the records of every file, the indexes being 0 to
// Records()-1.
func (f *Files) Records() int64 {
	if len(f.ends) == 0 {
		return 0
	}
	return f.ends[len(f.ends)-1]
}

// Locate returns the file that holds the record of index and the record's
// place in it, from 0; an index out of [0, Records()) is an error.
func (f *Files) Locate(index int64) (path string, record int64, err error) {
	if index < 0 || index >= f.Records() {
		return "", 0, errors.Errorf("client: record index %d out of the %d records of the files", index, f.Records())
	}
	i := f.file(index)
	return f.paths[i], index - f.start(i), nil
}

// Spans returns the records of indexes [start, end) as runs of one file
// each, in index order, without empty runs (empty files hold none): a task
// of an index-range dataset (wire.Task.Start, End) read file by file. A
// range not within [0, Records()] is an error; an empty one has no span.
func (f *Files) Spans(start, end int64) ([]Span, error) {
	if start < 0 || end < start || end > f.Records() {
		return nil, errors.Errorf("client: record range [%d, %d) out of the %d records of the files", start, end, f.Records())
	}
	var spans []Span
	for i := f.file(start); start < end; i++ {
		if f.ends[i] == f.start(i) {
			continue // empty
		}
		to := min(end, f.ends[i])
		spans = append(spans, Span{Path: f.paths[i], From: start - f.start(i), To: to - f.start(i)})
		start = to
	}
	return spans, nil
}

// file returns the file holding index, which is in [0, Records()): the
// first whose end is past it, so never an empty one.
func (f *Files) file(index int64) int {
	return sort.Search(len(f.ends), func(i int) bool { return f.ends[i] > index })
}

// start returns the index of file i's first record.
func (f *Files) start(i int) int64 {
	if i == 0 {
		return 0
	}
	return f.ends[i-1]
}
