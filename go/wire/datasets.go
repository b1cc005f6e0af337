package wire

import (
	"slices"

	"github.com/pkg/errors"
)

// Named datasets. A job holds several datasets, each with its own tasks,
// passes and progress: the one of the calls that name none (ReportDataset
// among them) is DefaultDataset, "train"; an evaluation dataset,
// say "eval", is declared beside it and trained by the trainers that name
// it in Task.Dataset (GetTask) and Progress.Dataset. The methods of named
// datasets:
//
//	Master.DeclareDataset(d Dataset, reply *int) error
//	Master.StartRound(r Round, reply *int) error
//	Master.DatasetStatus(name string, reply *Status) error
//
// DeclareDataset plays ReportDataset's part for a named dataset: the first
// declaration of a name decides it (unless the master declared it itself,
// its -datasets file), and a later one must describe the same dataset, or
// is refused with both descriptions in the error. A dataset is RecordIO
// files (Patterns, cut into tasks of ChunksPerTask chunks) or an
// index-range dataset (Records, cut into tasks of RecordsPerTask): a task
// of the latter carries the range [Start, End) of record indexes, and the
// trainer maps them to its own storage.
//
// A dataset without end (Dataset.Endless, or the master's -passes 0) runs
// pass after pass until the job is stopped: its Status has Passes 0 and
// never AllDone, and StartRound is refused (its round never ends).
//
// StartRound runs a dataset again once its passes are over: round r is the
// r-th time its passes are run, from 0 (the declaration starts round 0).
// Starting round r is idempotent: when several trainers ask, the first one
// starts it and the others find it started; asking for the next round while
// the current one runs is refused with TextRoundRunning. *reply is the
// round now current.

// DefaultDataset is the dataset of calls that name none.
const DefaultDataset = "train"

// MaxDatasetNameBytes bounds a dataset's name.
const MaxDatasetNameBytes = 64

// Dataset describes a named dataset (Master.DeclareDataset).
type Dataset struct {
	Name string // see CheckDatasetName; empty: DefaultDataset
	// Patterns are the RecordIO files, as ReportDataset takes them.
	Patterns []string `json:",omitempty"`
	// ChunksPerTask groups a RecordIO dataset's chunks into tasks; 0: the
	// master's -chunks-per-task.
	ChunksPerTask int `json:",omitempty"`
	// Records and RecordsPerTask declare an index-range dataset instead of
	// files: tasks are the ranges [i×RecordsPerTask, (i+1)×RecordsPerTask)
	// of [0, Records).
	Records        int64 `json:",omitempty"`
	RecordsPerTask int64 `json:",omitempty"`
	// Passes is how many passes a round of it runs; 0: the master's
	// -passes (which may be without end).
	Passes int `json:",omitempty"`
	// Endless declares passes without end: each pass its own, until the
	// job is stopped; Passes is then 0. A field of its own, so that 0
	// keeps meaning the master's -passes; a master that predates it
	// ignores it and runs its -passes (Status.Passes then is not 0).
	Endless bool `json:",omitempty"`
}

// IsRange reports whether d declares an index-range dataset.
func (d Dataset) IsRange() bool { return d.Records != 0 || d.RecordsPerTask != 0 }

// reservedNames are the names a dataset cannot take: the keys a job stored
// without a dataset prefix keeps right under NS/task_queues/ (doc/etcd.md),
// which a dataset's keys would overlap.
var reservedNames = []string{"meta", "pass", "files", "chunks", "tasks"}

// ReservedDatasetName reports whether name is one a dataset cannot take:
// meta, pass, files, chunks or tasks (doc/etcd.md).
func ReservedDatasetName(name string) bool { return slices.Contains(reservedNames, name) }

// CheckDatasetName says why name cannot name a dataset, or returns nil: a
// name is 1 to MaxDatasetNameBytes bytes of lower-case ASCII letters,
// digits, '_', '-' and '.', starting with a letter or a digit, and none of
// meta, pass, files, chunks and tasks. It travels in etcd keys, metric
// labels and log lines as it is.
func CheckDatasetName(name string) error {
	switch {
	case name == "":
		return errors.New("empty dataset name")
	case len(name) > MaxDatasetNameBytes:
		return errors.Errorf("dataset name of %d bytes (at most %d)", len(name), MaxDatasetNameBytes)
	case ReservedDatasetName(name):
		return errors.Errorf("dataset name %q is reserved (meta, pass, files, chunks and tasks are)", name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		alnum := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || c != '_' && c != '-' && c != '.') {
			return errors.Errorf("dataset name %q: want lower-case letters, digits, '_', '-' and '.', starting with a letter or a digit", name)
		}
	}
	return nil
}

// DatasetName returns the dataset a call names: DefaultDataset for none.
func DatasetName(name string) string {
	if name == "" {
		return DefaultDataset
	}
	return name
}

// Round is what Master.StartRound carries.
type Round struct {
	Dataset string // empty: DefaultDataset
	Round   int    // the round to start, from 0
}

// TextRoundRunning: StartRound asked for the next round of a dataset whose
// current round is not over; ask again once it is.
const TextRoundRunning = "round still running"
