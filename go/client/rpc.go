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

// Declare declares a named dataset with Master.DeclareDataset: RecordIO
// files (d.Patterns), or an index-range dataset (d.Records in tasks of
// d.RecordsPerTask) whose tasks carry record indexes (Record.Index). The
// first declaration of a name decides the dataset; a later one must
// describe the same, or is refused. The client remembers d, and declares
// it again, as it reports ReportDataset's files again, when a master later
// answers "dataset not reported". Trainers of the dataset name it in
// Config.Dataset; any trainer may declare it.
func (c *Client) Declare(ctx context.Context, d wire.Dataset) error {
	var reply int
	if err := c.call(ctx, "DeclareDataset", d, &reply); err != nil {
		return err
	}
	c.setDeclared(d)
	return nil
}

// reportAgain reports and declares again every dataset the client reported
// or declared, for a master that answered "dataset not reported": it may be
// a new master without them, and the trainers that wait for them may not
// know them.
func (c *Client) reportAgain(ctx context.Context) error {
	paths, declared := c.reported()
	if paths != nil {
		if err := c.ReportDataset(ctx, paths); err != nil {
			return err
		}
	}
	for _, d := range declared {
		if err := c.Declare(ctx, d); err != nil {
			return err
		}
	}
	return nil
}

// StartRound asks the master to run the passes of Config.Dataset again, as
// round round (the declaration starts round 0), and returns the round now
// current. A round that already started is not started again, so every
// trainer of the dataset may ask for the next one; asking while the
// current round runs answers an error carrying wire.TextRoundRunning. A
// Records loop ends once a round's passes are done: start the next round,
// then call Records again.
func (c *Client) StartRound(ctx context.Context, round int) (int, error) {
	var current int
	err := c.call(ctx, "StartRound", wire.Round{Dataset: c.cfg.Dataset, Round: round}, &current)
	return current, err
}

// DatasetStatus returns the master's progress in Config.Dataset (its
// round, pass and queues), with the names of every dataset of the job. A
// dataset the job does not hold (yet) shows DatasetReported false.
func (c *Client) DatasetStatus(ctx context.Context) (wire.Status, error) {
	var st wire.Status
	err := c.call(ctx, "DatasetStatus", c.cfg.Dataset, &st)
	return st, err
}

// GetTask reports finished (the zero Task for none) and fetches the next
// task, in one round trip. Records does this itself; GetTask is for programs
// that manage tasks on their own. Of finished only Index, Epoch, Pass and
// OnePass are sent, with Config.Name as Trainer and Config.Dataset as
// Dataset (for the zero Task too: it asks for a task of that dataset): the
// master needs no more, and the blocks would make the request as large as
// the task. With OnePass it asks for a task of pass Pass only
// (wire.Task.OnePass: the master answers wire.TextPassOver once another
// pass is current).
func (c *Client) GetTask(ctx context.Context, finished wire.Task) (wire.Task, error) {
	var t wire.Task
	arg := c.report(finished)
	arg.OnePass, arg.Ask = finished.OnePass, c.asks.Add(1) // a retry of this call (call) sends the same
	if c.cfg.Group.Ranks > 0 {
		arg.Rank, arg.Ranks, arg.Batch = c.cfg.Rank, c.cfg.Group.Ranks, c.cfg.Group.Batch
	}
	err := c.call(ctx, "GetTask", arg, &t)
	return t, err
}

// TaskFinished reports that every record of task was consumed; only its
// Index, Epoch and Pass are sent, with Config.Name as Trainer and
// Config.Dataset as Dataset.
func (c *Client) TaskFinished(ctx context.Context, task wire.Task) (wire.Report, error) {
	var r int
	err := c.call(ctx, "TaskFinished", c.report(task), &r)
	return wire.Report(r), err
}

// TaskProgress reports how far the current dispatch of a task got
// (wire.Progress), with Config.Name as Trainer and Config.Dataset as
// Dataset, and returns the master's answer: what it did, and where the
// dispatch is to stop. Records calls it by itself every
// Config.ProgressInterval, and stops where it is told.
func (c *Client) TaskProgress(ctx context.Context, p wire.Progress) (wire.ProgressReply, error) {
	p.Trainer, p.Dataset = c.cfg.Name, c.cfg.Dataset
	var r wire.ProgressReply
	err := c.call(ctx, "TaskProgress", p, &r)
	return r, err
}

// TaskFailed reports that task cannot be processed, with reason's text cut
// to wire.MaxErrorBytes (all the master keeps); only its Index, Epoch and
// Pass are sent with the reason, and Config.Name as Trainer and
// Config.Dataset as Dataset.
func (c *Client) TaskFailed(ctx context.Context, task wire.Task, reason error) (wire.Report, error) {
	failed := c.report(task)
	failed.Error = wire.CutReason(reason.Error())
	var r int
	err := c.call(ctx, "TaskFailed", failed, &r)
	return wire.Report(r), err
}
