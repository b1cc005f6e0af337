package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"

	"github.com/pkg/errors"

	"github.com/trainmaster/master/go/wire"
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
// "passes" (of one round) default to the flags'. Unknown keys are refused,
// so that a misspelt one is not silently ignored.

// maxDatasetsFileBytes bounds the file: the patterns of a dataset take at
// most 64 KiB (internal/dataset's limit), and a master at most a few dozen
// datasets.
const maxDatasetsFileBytes = 4 << 20

// datasetEntry is one element of the file.
type datasetEntry struct {
	Name           string   `json:"name"`
	Patterns       []string `json:"patterns"`
	ChunksPerTask  int      `json:"chunks_per_task"`
	Records        int64    `json:"records"`
	RecordsPerTask int64    `json:"records_per_task"`
	Passes         int      `json:"passes"`
}

// readDatasets reads a -datasets file.
func readDatasets(path string) ([]wire.Dataset, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxDatasetsFileBytes+1))
	if err != nil {
		return nil, errors.Wrapf(err, "%s", path)
	}
	if len(b) > maxDatasetsFileBytes {
		return nil, errors.Errorf("%s: more than %d bytes", path, maxDatasetsFileBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var entries []datasetEntry
	if err := dec.Decode(&entries); err != nil {
		return nil, errors.Wrapf(err, "%s: want a JSON array of datasets ({\"name\": ..., \"patterns\": [...]} or {\"name\": ..., \"records\": N, \"records_per_task\": M})", path)
	}
	if dec.More() {
		return nil, errors.Errorf("%s: more than one JSON value", path)
	}
	datasets := make([]wire.Dataset, len(entries))
	for i, e := range entries {
		if e.Name == "" {
			return nil, errors.Errorf("%s: dataset %d of %d has no name", path, i+1, len(entries))
		}
		datasets[i] = wire.Dataset{Name: e.Name, Patterns: e.Patterns, ChunksPerTask: e.ChunksPerTask,
			Records: e.Records, RecordsPerTask: e.RecordsPerTask, Passes: e.Passes}
	}
	return datasets, nil
}
