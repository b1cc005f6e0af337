package dataset

import (
	"math"

	"github.com/pkg/errors"

	"github.com/trainmaster/master/go/wire"
)

// Index-range datasets: a number of records cut into tasks of a number of
// records each, with no files. Task i covers the record indexes
// [i×RecordsPerTask, min((i+1)×RecordsPerTask, records)); the trainer maps
// them to its own storage.

// The limits of an index-range dataset. A declaration comes from a client:
// the queues take memory per task, so the tasks are bounded whatever it
// names.
const (
	// MaxRangeTasks bounds the tasks of an index-range dataset (the queues
	// take about 40 bytes a task).
	MaxRangeTasks = 1 << 20
	// MaxRangeRecords bounds its records: 2^53, exact in a JSON number.
	MaxRangeRecords = 1 << 53
	// MaxRecordsPerTask bounds a task's records: positions inside a task
	// are 32-bit in the queues.
	MaxRecordsPerTask = math.MaxInt32
)

// NewRange returns the index-range dataset of records records in tasks of
// perTask, or says which limit it breaks.
func NewRange(records, perTask int64) (*Dataset, error) {
	switch {
	case records <= 0 || records > MaxRangeRecords:
		return nil, errors.Errorf("dataset: an index-range dataset of %d records: want 1 to %d", records, int64(MaxRangeRecords))
	case perTask <= 0 || perTask > MaxRecordsPerTask:
		return nil, errors.Errorf("dataset: tasks of %d records: want 1 to %d", perTask, MaxRecordsPerTask)
	}
	if tasks := (records + perTask - 1) / perTask; tasks > MaxRangeTasks {
		return nil, errors.Errorf("dataset: %d records in tasks of %d make %d tasks, more than the %d an index-range dataset may have: raise the records per task",
			records, perTask, tasks, MaxRangeTasks)
	}
	return &Dataset{RecordsPerTask: perTask, records: records}, nil
}

// IsRange reports whether d is an index-range dataset.
func (d *Dataset) IsRange() bool { return d.RecordsPerTask > 0 }

// Range returns the record indexes [start, end) of a task of an
// index-range dataset.
func (d *Dataset) Range(task int) (start, end int64) {
	start = int64(task) * d.RecordsPerTask
	return start, min(start+d.RecordsPerTask, d.records)
}

// Spec returns the declaration d was accepted for.
func (d *Dataset) Spec() wire.Dataset {
	if d.IsRange() {
		return wire.Dataset{Name: d.Name, Records: d.records, RecordsPerTask: d.RecordsPerTask, Passes: d.Passes, Endless: d.Endless}
	}
	return wire.Dataset{Name: d.Name, Patterns: d.Patterns, ChunksPerTask: d.ChunksPerTask, Passes: d.Passes, Endless: d.Endless}
}
