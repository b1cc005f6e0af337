package taskqueue

import (
	"math"

	"github.com/pkg/errors"

	"github.com/trainmaster/master/go/wire"
)

// The order of a pass. Without a seed (Config.Seed 0) a pass hands its
// tasks out in task order, which is the files' order. With one, pass p
// hands them out in the order
//
//	wire.Shuffle(tasks, wire.TaskSeed(Config.Seed, p, orderTask))
//
// drawn from the seed and the pass alone: two jobs with the same seed and
// dataset hand out the same order, and a master that takes over, given
// the same seed, continues it. Retries and lost trainers' tasks are then
// placed as in file order: at the end of Todo, and at its front.
//
// An untouched task's Seq is its position in its pass's order (entry), so
// that Restore, which sorts Todo by Seq, rebuilds the same order. Memory:
// the positions, 4 bytes per task, kept only with a seed; the order itself
// is drawn when a pass starts (8 bytes per task, dropped at once).

// orderTask is the task index whose wire.TaskSeed orders a pass: no task
// has it, so the pass's order is drawn apart from every task's records.
const orderTask = -1

// checkOrder refuses a seeded order the positions' int32 cannot hold.
func checkOrder(cfg Config, numTasks int) error {
	if cfg.Seed != 0 && numTasks > math.MaxInt32 {
		return errors.Errorf("taskqueue: %d tasks: a shuffled order holds at most %d", numTasks, math.MaxInt32)
	}
	return nil
}

// appendOrder appends the tasks of pass p to todo, in the order the pass
// hands them out, each with its untouched Seq, and keeps their positions.
func (q *Queues) appendOrder(todo []todoItem, p int) []todoItem {
	if q.cfg.Seed == 0 {
		for i := range q.entries {
			todo = append(todo, todoItem{task: i, seq: int64(i)})
		}
		return todo
	}
	if q.positions == nil {
		q.positions = make([]int32, len(q.entries))
	}
	for at, task := range wire.Shuffle(len(q.entries), wire.TaskSeed(q.cfg.Seed, p, orderTask)) {
		q.positions[task] = int32(at)
		todo = append(todo, todoItem{task: task, seq: int64(at)})
	}
	return todo
}

// untouchedSeq returns the Seq of a task untouched in the current pass:
// its position in the pass's order.
func (q *Queues) untouchedSeq(task int) int64 {
	if q.positions == nil || task >= len(q.positions) { // a piece, until set
		return int64(task)
	}
	return int64(q.positions[task])
}
