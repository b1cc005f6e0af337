package client

import "github.com/trainmaster/master/go/wire"

// trainingOrder returns a task's records in the order to train them: the
// file's, or, when the master gave the task a seed (a job with a
// -shuffle-seed), the order wire.Shuffle draws from it. Positions in a
// task (Task.From, wire.Progress) count in this order.
func trainingOrder(task wire.Task, records [][]byte) [][]byte {
	if task.Seed == 0 {
		return records
	}
	ordered := make([][]byte, len(records))
	for i, r := range wire.Shuffle(len(records), task.Seed) {
		ordered[i] = records[r]
	}
	return ordered
}
