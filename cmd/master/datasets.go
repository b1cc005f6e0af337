package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/pkg/errors"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/dataset"
	"github.com/trainmaster/master/internal/master"
)

// The -datasets file: the datasets this master declares, so that trainers
// only name what they want. It is a JSON array, each element one dataset:
//
//	[
//	  {"name": "train", "patterns": ["/data/train-*.recordio"], "chunks_per_task": 10, "passes": 3},
//	  {"name": "eval", "records": 1000000, "records_per_task": 1000}
//	]
//
// "patterns" (RecordIO files, as -dataset takes them) or "records" with
// "records_per_task" (an index-range dataset); "chunks_per_task" and
// "passes" (of one round) default to the flags'; "passes": 0, given, runs
// passes without end (wire.Dataset.Endless). Unknown keys are refused,
// so that a misspelt one is not silently ignored. Every error names the
// file and the line of the dataset it refuses (doc/operations.md).

// maxDatasetsFileBytes bounds the file: the patterns of a dataset take at
// most 64 KiB (internal/dataset's limit), and a master at most a few dozen
// datasets.
const maxDatasetsFileBytes = 4 << 20

// wantDatasets says what the file holds, for its errors.
const wantDatasets = `want a JSON array of datasets ({"name": ..., "patterns": [...]} or {"name": ..., "records": N, "records_per_task": M})`

// datasetsFile is a -datasets file read: its datasets and the line each
// begins on.
type datasetsFile struct {
	path     string
	content  []byte
	datasets []wire.Dataset
	lines    []int
}

// readDatasets reads a -datasets file. Its errors begin with -datasets
// and the file.
func readDatasets(path string) (*datasetsFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, errors.WithMessage(err, "-datasets")
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxDatasetsFileBytes+1))
	if err != nil {
		return nil, errors.Wrapf(err, "-datasets %s", path)
	}
	if len(b) > maxDatasetsFileBytes {
		return nil, errors.Errorf("-datasets %s: more than %d bytes", path, maxDatasetsFileBytes)
	}
	file := &datasetsFile{path: path, content: b}
	return file, file.parse()
}

// line is the line of the first byte at or after offset that is not
// white space or a comma: where the next JSON value begins.
func (f *datasetsFile) line(offset int64) int {
	offset = min(max(offset, 0), int64(len(f.content)))
	return f.lineOf(offset + int64(len(f.content[offset:])-len(bytes.TrimLeft(f.content[offset:], " \t\r\n,"))))
}

// lineOf is the line of the byte at offset.
func (f *datasetsFile) lineOf(offset int64) int {
	return 1 + bytes.Count(f.content[:min(max(offset, 0), int64(len(f.content)))], []byte{'\n'})
}

// at names a line of the file in an error.
func (f *datasetsFile) at(line int) string {
	return fmt.Sprintf("-datasets %s:%d", f.path, line)
}

// parse decodes the array one element at a time, to know where each
// begins.
func (f *datasetsFile) parse() error {
	dec := json.NewDecoder(bytes.NewReader(f.content))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return f.syntaxError(dec, err)
	}
	var elements []map[string]json.RawMessage
	for dec.More() {
		line := f.line(dec.InputOffset())
		var element map[string]json.RawMessage
		var typ *json.UnmarshalTypeError
		if err := dec.Decode(&element); errors.As(err, &typ) {
			return errors.Errorf("%s: a dataset is a JSON %s, not an object: %s", f.at(line), typ.Value, wantDatasets)
		} else if err != nil {
			return f.syntaxError(dec, err)
		}
		elements = append(elements, element)
		f.lines = append(f.lines, line)
	}
	if _, err := dec.Token(); err != nil {
		return f.syntaxError(dec, err)
	}
	if dec.More() {
		return errors.Errorf("%s: more than one JSON value: %s", f.at(f.line(dec.InputOffset())), wantDatasets)
	}
	for i, element := range elements {
		d, err := datasetOf(element)
		if err == nil && d.Name == "" {
			err = errors.Errorf("dataset %d of %d has no name", i+1, len(elements))
		}
		if err != nil {
			return errors.WithMessage(err, f.at(f.lines[i]))
		}
		f.datasets = append(f.datasets, d)
	}
	return nil
}

// syntaxError says where the decoder stopped and why.
func (f *datasetsFile) syntaxError(dec *json.Decoder, err error) error {
	line := f.line(dec.InputOffset())
	var syntax *json.SyntaxError
	switch {
	case err == nil:
		err = errors.New("not an array")
	case errors.As(err, &syntax):
		line = f.lineOf(syntax.Offset - 1) // the byte refused
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		line = f.lineOf(int64(len(bytes.TrimRight(f.content, " \t\r\n"))))
		err = errors.New("unexpected end of the file")
	}
	return errors.Errorf("%s: %v: %s", f.at(line), err, wantDatasets)
}

// datasetField is a key of an element of the file: where its value goes,
// and what it may be.
type datasetField struct {
	value any
	want  string
}

// datasetOf returns the dataset an element of the file declares.
func datasetOf(element map[string]json.RawMessage) (wire.Dataset, error) {
	var d wire.Dataset
	fields := map[string]datasetField{
		"name": {&d.Name, "a string"}, "patterns": {&d.Patterns, "an array of strings"},
		"chunks_per_task": {&d.ChunksPerTask, "an integer"}, "records": {&d.Records, "an integer"},
		"records_per_task": {&d.RecordsPerTask, "an integer"}, "passes": {&d.Passes, "an integer"},
	}
	for _, key := range slices.Sorted(maps.Keys(element)) {
		field, ok := fields[key]
		if !ok {
			return d, errors.Errorf("unknown field %s (want %s)", dataset.Quote(key), strings.Join(slices.Sorted(maps.Keys(fields)), ", "))
		}
		if json.Unmarshal(element[key], field.value) != nil {
			return d, errors.Errorf("field %q: want %s, not %s", key, field.want, dataset.Quote(string(element[key])))
		}
	}
	_, passes := element["passes"]
	d.Endless = passes && d.Passes == 0 // absent: the flags'
	return d, nil
}

// declarationError names the file's line, or -dataset, of the
// declarations a master.DeclarationError refuses; other errors, and
// errors without a file (f nil), are returned as they are.
func (f *datasetsFile) declarationError(err error) error {
	var de *master.DeclarationError
	if f == nil || !errors.As(err, &de) {
		return err
	}
	where := func(i int) string {
		if i < len(f.lines) {
			return f.at(f.lines[i])
		}
		return "-dataset"
	}
	switch {
	case de.First >= 0:
		return errors.Errorf("%s: %v, first at %s: declare each name once", where(de.Index), de.Err, where(de.First))
	case de.Index >= len(f.lines) && len(f.lines) > 0:
		return errors.Errorf("-datasets %s and -dataset: %v", f.path, de.Err)
	}
	return errors.WithMessage(de.Err, where(de.Index))
}
