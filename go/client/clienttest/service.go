package clienttest

import (
	"time"

	"github.com/pkg/errors"

	"github.com/trainmaster/master/go/wire"
)

// service holds the RPC methods, apart from Master's own API.
type service struct{ m *Master }

// answer logs the call; m.mu is held.
func (m *Master) answer(method string, arg, reply wire.Task, r wire.Report, err error) error {
	e := Event{At: time.Now(), Method: method, Arg: arg, ArgBlocks: len(arg.Blocks), Reply: reply, Report: r}
	e.Arg.Blocks, e.Reply.Blocks = nil, nil
	if err != nil {
		e.Err = err.Error()
	}
	m.events = append(m.events, e)
	return err
}

func (s *service) ReportDataset(paths []string, reply *int) error {
	m := s.m
	err := m.enter("ReportDataset")
	defer m.mu.Unlock()
	if err == nil {
		err = m.q.report(paths)
	}
	return m.answer("ReportDataset", wire.Task{}, wire.Task{}, 0, err)
}

func (s *service) GetTask(finished wire.Task, reply *wire.Task) error {
	m := s.m
	err := m.enter("GetTask")
	defer m.mu.Unlock()
	var r wire.Report
	if err == nil {
		r, err = m.q.get(finished, reply)
	}
	return m.answer("GetTask", finished, *reply, r, err)
}

func (s *service) TaskFinished(t wire.Task, reply *int) error {
	m := s.m
	err := m.enter("TaskFinished")
	defer m.mu.Unlock()
	var r wire.Report
	if err == nil {
		r, err = m.q.finish(t)
	}
	*reply = int(r)
	return m.answer("TaskFinished", t, wire.Task{}, r, err)
}

func (s *service) TaskFailed(t wire.Task, reply *int) error {
	m := s.m
	err := m.enter("TaskFailed")
	defer m.mu.Unlock()
	var r wire.Report
	if err == nil {
		r, err = m.q.fail(t)
	}
	*reply = int(r)
	return m.answer("TaskFailed", t, wire.Task{}, r, err)
}

var errBadReport = errors.New("bad report")

// TaskProgress logs a progress report and answers it recorded; the queue
// keeps no position.
func (s *service) TaskProgress(p wire.Progress, reply *wire.ProgressReply) error {
	m := s.m
	err := m.enter("TaskProgress")
	defer m.mu.Unlock()
	if err == nil {
		reply.Report = wire.Recorded
	}
	arg := wire.Task{Index: p.Index, Epoch: p.Epoch, Pass: p.Pass, Trainer: p.Trainer, Dataset: p.Dataset}
	err = m.answer("TaskProgress", arg, wire.Task{}, reply.Report, err)
	m.events[len(m.events)-1].Done = p.Done
	return err
}
