package client

import (
	"context"
	"iter"

	"github.com/trainmaster/master/go/wire"
)

// Record is one record of a task, as Records yields it.
type Record struct {
	// Data is the record's bytes. It is valid only until the loop body
	// returns: the client reads later tasks into the same memory. Copy it
	// to keep it. It is nil in a task of an index-range dataset, whose
	// records the trainer reads from its own storage by Index, and only
	// there: an empty record of a file is an empty slice.
	Data []byte
	// Index is, in a task of an index-range dataset (wire.Dataset.Records),
	// the record's index in the dataset: the trainer maps it to its storage
	// (Files maps it to a file and a record in it). It is 0, meaningless,
	// in a task of RecordIO files, whose records come in Data.
	Index int64
	// Task is the index of the task the record belongs to: for a piece of
	// a task (wire.Task.Piece), the task it was cut from.
	Task int
	Pass int // pass of the task's dispatch, from 0
	// Position is the record's place in its task's record order, from 0
	// (wire.Progress): a task handed out again after a fault starts past
	// the records an earlier dispatch reported trained.
	Position int
	// Last is set on the last record of its task: once the loop body returns
	// after it, the task is consumed and will be reported finished. A task
	// the master cuts short while it is consumed (wire.ProgressReply.To)
	// ends with one if the loop learned the cut before it yielded the
	// record before it, as it does unless the loop is late (the master
	// cuts far enough ahead of the position last reported); else without.
	Last bool
	// RankRecords and RankBatches are, for a rank of a group
	// (Config.Group), its plan of the pass (wire.Task's): its share of
	// the pass's records and the batches every rank forms of its share
	// (wire.BatchSizes). 0 outside a group.
	RankRecords int64
	RankBatches int
}

// Records yields the records of the tasks of Config.Dataset the master
// hands this client, in each task's order, until every pass is done (of
// the dataset's current round: see StartRound); then the loop ends with no
// error. A task of RecordIO files yields its records' Data; a task of an
// index-range dataset reads no file and yields one Record per index it
// covers, with Index set and no Data. A task is reported finished once its last record has been yielded
// and the loop asks for more; one left early is not (the master gives it out
// again when it times out).
//
// Errors end the loop: one that stops the client (its context ends, Close,
// or an answer from the master it cannot act on) is yielded once, with a
// zero Record, and the loop stops. When ctx ends the error yielded is
// ctx.Err(). Records may be called again after a loop ends, e.g. to resume
// after a break.
func (c *Client) Records(ctx context.Context) iter.Seq2[Record, error] {
	return c.loop(ctx, false)
}

// Pass is Records for one pass: it yields the records of the pass current
// at the master when it begins (the pass of the first task it is handed),
// and ends, with no error, when the master moves past it or every pass is
// done: not when this client alone finds no task, as other trainers may
// still hold tasks of the pass. It never takes a task of a later pass
// (wire.Task.OnePass: the master answers wire.TextPassOver instead). Each
// call begins another loop, so that
//
//	for epoch := 0; ; epoch++ {
//		for rec, err := range c.Pass(ctx) { ... }
//	}
//
// trains pass 0, then pass 1, and so on; a loop begun once every pass is
// done yields nothing. A loop left early (break) leaves its pass running:
// the next loop goes on with it if it is still current. A trainer that
// asks for its first task only after its pass ended elsewhere trains the
// next one.
func (c *Client) Pass(ctx context.Context) iter.Seq2[Record, error] {
	return c.loop(ctx, true)
}

// loop is Records, or with onePass Pass.
func (c *Client) loop(ctx context.Context, onePass bool) iter.Seq2[Record, error] {
	return func(yield func(Record, error) bool) {
		s := c.start(ctx, onePass)
		defer s.stop(ctx)
		for {
			l, err := s.take(ctx)
			if err != nil {
				if err != errEnd {
					yield(Record{}, err)
				}
				return
			}
			if !s.yieldTask(ctx, l, yield) {
				return
			}
			s.consumed(l)
		}
	}
}

// yieldTask yields the records of l; it returns false if the loop stopped
// (the body broke out, ctx ended or the client was closed) before the last
// one was consumed.
//
// A task that waited is first checked with the master (progress.check).
// It starts at the task's From: an earlier dispatch trained the records
// before it (wire.Progress), stops at its To, tells the progress reporter
// how far it got, and stops early when the reporter learns the task is no
// longer this trainer's or its new end.
func (s *session) yieldTask(ctx context.Context, l *loaded, yield func(Record, error) bool) bool {
	if !s.progress.check(ctx, l) {
		l.dropped = true
		return true
	}
	order := trainingOrder(l.task, l.buf)
	n := order.n
	if to := l.task.To; to > 0 && to < n {
		n = to
	}
	last := n - 1
	s.progress.begin(l.task)
	for i := min(max(l.task.From, 0), n); i < n; i++ {
		to := s.progress.to.Load()
		if to > 0 && int64(i) >= to {
			break // cut short: the rest is another trainer's piece
		}
		if err := s.interrupted(ctx); err != nil {
			yield(Record{}, err)
			return false
		}
		if s.progress.dropped.Load() {
			l.dropped = true // another trainer has it, or it is done: not ours to finish
			break
		}
		rec := order.at(i)
		rec.Task, rec.Pass, rec.Position, rec.Last = l.task.Root(), l.task.Pass, i, i == last || int64(i+1) == to
		rec.RankRecords, rec.RankBatches = l.task.RankRecords, l.task.RankBatches
		s.progress.has(i + 1)
		more := yield(rec, nil)
		s.progress.reached(i + 1) // the body had the record, even if it broke out after it
		if !more {
			return false
		}
	}
	if !l.dropped {
		s.c.trained.add(l.task, int(s.progress.through.Load()))
	}
	s.progress.end()
	return true
}

// report is the part of a task that a finish or failure report needs, with
// this trainer's name and dataset: its blocks need not travel back.
func (c *Client) report(t wire.Task) wire.Task {
	return wire.Task{Index: t.Index, Epoch: t.Epoch, Pass: t.Pass, Gen: t.Gen, Trainer: c.cfg.Name, Dataset: c.cfg.Dataset}
}
