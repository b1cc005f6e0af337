package taskqueue

// A GetTask whose answer is lost. A trainer's GetTask carries the finish
// of its last task and gets the next one; when the answer is lost (the
// connection broke, the master failed over after committing), the trainer
// calls again with the same finish, which is already recorded. Without
// more, that retry would get another task, or none at the end of a pass,
// and the dispatch it never received would stay pending with a trainer
// that is alive, connected and not training it, until its timeout.
//
// So each dispatch keeps, with its entry (stored, so that a new master
// knows it too), the finish its GetTask carried (Entry.For), and a retry
// that carries a finish already recorded gets the dispatch that answered
// it, if that dispatch is still pending with the same trainer: the same
// task and epoch, as if the answer had arrived. A trainer only ever sends
// a finish again to retry, so this is never a second dispatch of a task
// it has.
//
// A GetTask that carries no finish (a trainer reading ahead, a rank's
// first of a pass) is told from another by its Ask (wire.Task.Ask), a
// number the trainer gives each of its GetTasks and sends again with a
// retry: the dispatch keeps it, and a GetTask from the same trainer with
// the same Ask gets that dispatch again. Without it, a rank's task whose
// answer was lost would stay pending for ever: a rank's dispatch has no
// deadline.

// Finished names what a GetTask carried: the finish of a task's dispatch
// in a pass, and the trainer's number of the call (Ask; 0: none).
type Finished struct {
	Task, Epoch, Pass int
	Ask               int64
}

// resends owns Entry.For: the finish each pending dispatch answered.
// Invariant: answers has exactly the Pending entries with a For.
type resends struct {
	answers map[int]Finished // pending task -> the finish its dispatch answered
}

func newResends() resends { return resends{answers: map[int]Finished{}} }

// apply keeps the finish a task's dispatch answered while it is pending.
func (r *resends) apply(task int, _, e *Entry) {
	if e.Queue == Pending && e.For != (Finished{}) {
		r.answers[task] = e.For
	} else {
		delete(r.answers, task)
	}
}

// fill sets the finish a pending entry's dispatch answered.
func (r *resends) fill(task int, e *Entry) {
	if e.Queue == Pending {
		e.For = r.answers[task]
	}
}

// startPass forgets every answer; no task is pending when a pass starts.
func (r *resends) startPass() { clear(r.answers) }

// Resend returns the pending dispatch held by trainer that answered the
// finish f, if there is one: the answer to a GetTask that is retried.
func (q *Queues) Resend(trainer string, f Finished) (task, epoch int, ok bool) {
	if !tracked(trainer) || f == (Finished{}) {
		return 0, 0, false
	}
	for task, answered := range q.resends.answers {
		if answered == f && q.holders.byTask[task] == trainer {
			return task, q.entry(task).Epoch, true
		}
	}
	return 0, 0, false
}
