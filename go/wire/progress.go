package wire

import "time"

// Progress inside a task. A trainer that trains a task's records in order
// reports how far it got with Master.TaskProgress, now and then and when it
// stops cleanly in the middle of a task; the master commits the position in
// the task's entry. When the task is handed out again (after a timeout, a
// failure report, a lost trainer or a failover) the reply's Task.From says
// where to start, and the trainer skips the records before it: they were
// trained.
//
// A position counts records in the task's record order: the records of its
// blocks one after the other, in the blocks' order (and, for a task with a
// shuffle seed, in that shuffled order). Position p means records 0 to p-1
// were trained; in file order it names the block and record reached.
//
// Reports cost the master one fenced etcd write each, so a trainer sends
// one at most every ProgressInterval, and the master records at most one
// per dispatch every MinProgressInterval: a report sooner than that is
// answered TooSoon and changes nothing. go/client and the Python client
// report, by default, as often as each task asks (Task.ProgressMillis,
// counted from the start of the task; DefaultProgressInterval when it
// asks nothing): never more often than MinProgressInterval, so a trainer
// costs the master at most one progress write a second, and a task that
// runs its expected time at most five.

// Progress is what Master.TaskProgress carries.
type Progress struct {
	Index, Epoch, Pass int    // the dispatch, as GetTask handed it out
	Trainer            string `json:",omitempty"` // the caller's name, as in Task: only the dispatch's holder's reports count
	Dataset            string `json:",omitempty"` // the task's dataset, as in Task
	// Done is the position reached: the records of the task's order before
	// it are trained. It is at most the task's records.
	Done int
	// Gen is the task's generation, as the master handed it (Task.Gen).
	Gen int `json:",omitempty"`
}

// ProgressReply is Master.TaskProgress's answer.
type ProgressReply struct {
	Report Report // what the master did with the report
	// To is where the dispatch is to stop: the position in the task's
	// record order past the last record it is to train. 0: the task's end
	// (Task.To), unchanged. The master cuts a straggling task short when
	// it hands its rest to an idle trainer as a piece (Task.Piece): the
	// trainer learns it here, at its first report after the cut, and
	// stops there; the records it trained past it are trained twice.
	To int `json:",omitempty"`
}

// DefaultProgressInterval is how often the clients report progress inside
// a task whose master asks nothing (Task.ProgressMillis), and the longest
// interval a master asks for: a task resumed after a fault loses at most
// this much of its work.
const DefaultProgressInterval = 10 * time.Second

// MinProgressInterval is the shortest interval between two progress
// reports of one dispatch that the master records, and the shortest one
// it asks for (Task.ProgressMillis).
const MinProgressInterval = time.Second
