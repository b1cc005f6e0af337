package porttest

import (
	"net/rpc"
	"testing"

	"github.com/trainmaster/master/go/wire"
)

// Trainer calls the master's contract on one connection under one name,
// failing its test on any error the call answers.
type Trainer struct {
	T    testing.TB
	Name string
	RC   *rpc.Client
}

// NewTrainer calls for name on rc, which is closed when the test ends.
func NewTrainer(t testing.TB, name string, rc *rpc.Client) *Trainer {
	t.Cleanup(func() { rc.Close() })
	return &Trainer{T: t, Name: name, RC: rc}
}

// GetTask reports finished, under the trainer's name, and returns the task
// handed out.
func (tr *Trainer) GetTask(finished wire.Task) wire.Task {
	tr.T.Helper()
	finished.Trainer = tr.Name
	var next wire.Task
	if err := tr.RC.Call("Master.GetTask", finished, &next); err != nil {
		tr.T.Fatalf("%s: GetTask: %v", tr.Name, err)
	}
	return next
}

// Progress reports done records of task's dispatch trained.
func (tr *Trainer) Progress(task wire.Task, done int) wire.ProgressReply {
	tr.T.Helper()
	var reply wire.ProgressReply
	p := wire.Progress{Index: task.Index, Epoch: task.Epoch, Pass: task.Pass, Trainer: tr.Name, Done: done}
	if err := tr.RC.Call("Master.TaskProgress", p, &reply); err != nil {
		tr.T.Fatalf("%s: TaskProgress: %v", tr.Name, err)
	}
	return reply
}

// Failed reports task's dispatch failed for reason.
func (tr *Trainer) Failed(task wire.Task, reason string) wire.Report {
	tr.T.Helper()
	var rep int
	failed := wire.Task{Index: task.Index, Epoch: task.Epoch, Pass: task.Pass, Trainer: tr.Name, Error: reason}
	if err := tr.RC.Call("Master.TaskFailed", failed, &rep); err != nil {
		tr.T.Fatalf("%s: TaskFailed: %v", tr.Name, err)
	}
	return wire.Report(rep)
}
