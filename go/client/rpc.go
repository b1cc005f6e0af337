package client

import (
	"context"

	"github.com/trainmaster/master/go/wire"
)

// ReportDataset tells the master which RecordIO files (glob patterns, as the
// master expands them) make up the dataset. The client remembers them and
// reports them again if a master later answers "dataset not reported".
func (c *Client) ReportDataset(ctx context.Context, paths []string) error {
	var reply int
	if err := c.call(ctx, "ReportDataset", paths, &reply); err != nil {
		return err
	}
	c.setDataset(paths)
	return nil
}

// GetTask reports finished (the zero Task for none) and fetches the next
// task, in one round trip. Records does this itself; GetTask is for programs
// that manage tasks on their own. Of finished only Index, Epoch and Pass
// are sent, with Config.Name as Trainer (for the zero Task too): the master
// needs no more, and the blocks would make the request as large as the task.
func (c *Client) GetTask(ctx context.Context, finished wire.Task) (wire.Task, error) {
	var t wire.Task
	err := c.call(ctx, "GetTask", c.report(finished), &t)
	return t, err
}

// TaskFinished reports that every record of task was consumed; only its
// Index, Epoch and Pass are sent, with Config.Name as Trainer.
func (c *Client) TaskFinished(ctx context.Context, task wire.Task) (wire.Report, error) {
	var r int
	err := c.call(ctx, "TaskFinished", c.report(task), &r)
	return wire.Report(r), err
}

// TaskProgress reports how far the current dispatch of a task got
// (wire.Progress), with Config.Name as Trainer, and returns the master's
// answer: what it did, and where the dispatch is to stop. Records calls it
// by itself every Config.ProgressInterval, and stops where it is told.
func (c *Client) TaskProgress(ctx context.Context, p wire.Progress) (wire.ProgressReply, error) {
	p.Trainer = c.cfg.Name
	var r wire.ProgressReply
	err := c.call(ctx, "TaskProgress", p, &r)
	return r, err
}

// TaskFailed reports that task cannot be processed, with reason's text cut
// to wire.MaxErrorBytes (all the master keeps); only its Index, Epoch and
// Pass are sent with the reason, and Config.Name as Trainer.
func (c *Client) TaskFailed(ctx context.Context, task wire.Task, reason error) (wire.Report, error) {
	failed := c.report(task)
	failed.Error = wire.CutReason(reason.Error())
	var r int
	err := c.call(ctx, "TaskFailed", failed, &r)
	return wire.Report(r), err
}
