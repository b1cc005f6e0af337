package client

import "github.com/trainmaster/master/go/wire"

// taskOrder is a task's records in the order to train them: positions in a
// task (Task.From, wire.Progress) count in this order. A file task's are
// its records, read; a range task's are the indexes Start..End-1, kept as
// Start and, with a seed, the shuffle of the offsets from it, so that a
// range task holds no record and at most n ints.
type taskOrder struct {
	n       int      // positions
	records [][]byte // a file task's records, in order
	start   int64    // a range task's first index
	shuffle []int    // a range task's offsets from start, in order; nil: 0..n-1
}

// isRange reports whether t is a task of an index-range dataset: it covers
// the record indexes [Start, End) and has no blocks.
func isRange(t wire.Task) bool { return t.End > t.Start && len(t.Blocks) == 0 }

// trainingOrder returns the order to train a task's records in: the
// file's (index order for a range task, whose buf is nil), or, when the
// master gave the task a seed (a job with a -shuffle-seed), the order
// wire.Shuffle draws from it.
func trainingOrder(task wire.Task, buf *taskBuf) taskOrder {
	if isRange(task) {
		o := taskOrder{n: int(task.End - task.Start), start: task.Start}
		if task.Seed != 0 {
			o.shuffle = wire.Shuffle(o.n, task.Seed)
		}
		return o
	}
	o := taskOrder{n: len(buf.records), records: buf.records}
	if task.Seed != 0 {
		o.records = make([][]byte, o.n)
		for i, r := range wire.Shuffle(o.n, task.Seed) {
			o.records[i] = buf.records[r]
		}
	}
	return o
}

// emptyRecord is the Data of an empty record of a file.
var emptyRecord = []byte{}

// at returns the record at position i of o: its Data for a file task, its
// Index for a range task (a file task with records has them non-nil).
func (o taskOrder) at(i int) Record {
	switch {
	case o.records != nil && o.records[i] == nil:
		return Record{Data: emptyRecord} // Data is nil only for a range task's records
	case o.records != nil:
		return Record{Data: o.records[i]}
	case o.shuffle != nil:
		return Record{Index: o.start + int64(o.shuffle[i])}
	}
	return Record{Index: o.start + int64(i)}
}
