// Package taskqueue is the master's bookkeeping of tasks, free of I/O: the
// Todo, Pending, Done and Failed queues, passes, epochs and timeouts derived
// from a moving average of task durations. Time is an argument of every
// operation, so the logic is tested exactly with made-up instants.
//
// Every operation mutates the Queues and returns a Change: the new entries of
// the tasks it touched and whether the pass changed. A Change is all a store
// needs to persist; Restore rebuilds Queues from the stored pass and entries.
// An entry belongs to one pass: an entry of an older pass means the task is
// untouched in the current one, in Todo with fresh counters, so starting a
// pass changes no entry at all.
//
// What it promises:
//   - A pass ends as soon as Todo and Pending are both empty, whichever way
//     the last task left (finished, failed or discarded); the next pass puts
//     every task back in Todo, failed ones included, with counters reset.
//   - A finish report for a dispatched task of the current pass moves it to
//     Done, whatever its epoch and queue; a report for a task already Done,
//     or for a pass that is over, changes nothing and says so.
//   - A task's position (Entry.Progress) moves only by the reports of its
//     current dispatch's holder: a position never passes records that
//     holder has not reported.
//   - Bad reports (unknown task, negative numbers, an epoch or pass that has
//     not happened) are errors and change nothing.
//
// Queues is not safe for concurrent use; the master serialises access.
package taskqueue
