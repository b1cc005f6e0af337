package master

import (
	"context"
	"fmt"
	"time"

	"github.com/pkg/errors"
	"github.com/sirupsen/logrus"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/taskqueue"
)

// The operations of the wire contract on a dataset's tasks. Each runs
// through durable: it changes the queues under the lock and replies once
// its change is durable.

// GetTask records the finish it carries, if any, then hands out a task;
// both changes are committed together before it replies.
func (s *datasetService) GetTask(ctx context.Context, finished wire.Task) (wire.Task, error) {
	start := s.called(&finished)
	task, err := durable(s, func() (wire.Task, effect, error) { return s.getTask(ctx, finished) })
	s.cfg.Observer.GetTaskServed(s.cfg.Clock.Now().Sub(start), err)
	return task, err
}

// called tells the Observer of a call from the trainer t names, replacing
// that name by the one the master keeps, and returns the call's start. A
// call is told only once the dataset is accepted: a call that reaches no
// dataset (answered wire.ErrNoDataset) adds no trainer, so that names
// invented for nothing cannot crowd the monitor.
func (s *datasetService) called(t *wire.Task) time.Time {
	now := s.cfg.Clock.Now()
	t.Trainer = wire.TrainerName(t.Trainer)
	if s.accepted() {
		s.cfg.Observer.Called(t.Trainer, now)
	}
	return now
}

// getTask is GetTask's operation. A GetTask whose finish was already
// recorded (its answer was lost) is handed the task it was given then. One
// asking for a task of one pass (wire.Task.OnePass) while another pass is
// current is answered wire.ErrPassOver, and hands out nothing.
// Called with s.mu held.
func (s *datasetService) getTask(ctx context.Context, finished wire.Task) (wire.Task, effect, error) {
	if err := s.readyWithDataset(ctx); err != nil {
		return wire.Task{}, effect{}, err
	}
	var eff effect
	f := taskqueue.Finished{Ask: finished.Ask}
	retry := finished.Ask != 0 // a call asked before may be this one again
	if finished.Epoch != 0 {
		rep, feff, err := s.finish(finished)
		if err != nil {
			return wire.Task{}, effect{}, err
		}
		eff = feff
		f = taskqueue.Finished{Task: finished.Index, Epoch: finished.Epoch, Pass: finished.Pass, Ask: finished.Ask}
		retry = rep == wire.AlreadyDone || rep == wire.StalePass
	}
	if task, epoch, ok := s.q.Resend(finished.Trainer, f); retry && ok {
		reply := s.taskReply(task, epoch, s.q.Entry(task))
		fields := logrus.Fields{"task": task, "epoch": epoch, "pass": reply.Pass, "trainer": finished.Trainer, "finished": finished.Index, "ask": finished.Ask}
		eff.events = append(eff.events, limitedLine(logrus.InfoLevel, fields, "GetTask retried after its answer was lost: the same task handed again"))
		return reply, eff, nil
	}
	if finished.OnePass && !s.q.AllDone() && s.q.Pass() != finished.Pass {
		// The finish carried, if any, is still committed. A pass not
		// begun is waited for: a rank done with its share asks for the
		// next while the others finish theirs.
		eff.err = wire.ErrPassOver
		if finished.Pass > s.q.Pass() {
			eff.err = wire.WithKind(wire.ErrNoTask, errors.Errorf("pass %d has not begun: the master is in pass %d", finished.Pass, s.q.Pass()))
		}
		return wire.Task{}, eff, nil
	}
	task, deff := s.dispatch(finished, f)
	return task, eff.then(deff), nil
}

// dispatch hands out a task to the trainer asking (a rank of a group, or
// a trainer outside any), for a GetTask that carried the finish f, in
// memory. Called with s.mu held.
func (s *datasetService) dispatch(asking wire.Task, f taskqueue.Finished) (wire.Task, effect) {
	now := s.cfg.Clock.Now()
	trainer := asking.Trainer
	var (
		task, epoch int
		ch          taskqueue.Change
		relieved    *taskqueue.Relief
		cut         *taskqueue.RankCut
		err         error
	)
	if g, ok := wire.GroupOf(asking); ok {
		task, epoch, ch, cut, err = s.q.DispatchRank(now, trainer, f, asking.Rank, g)
	} else {
		task, epoch, ch, relieved, err = s.q.DispatchFor(now, trainer, f)
	}
	switch {
	case errors.Is(err, taskqueue.ErrNoTask):
		return wire.Task{}, effect{err: wire.ErrNoTask}
	case errors.Is(err, taskqueue.ErrAllDone):
		return wire.Task{}, effect{err: wire.ErrAllDone}
	case errors.Is(err, wire.ErrBadGroup), errors.Is(err, wire.ErrPassTooSmall):
		fields := logrus.Fields{"trainer": trainer, "rank": asking.Rank, "ranks": asking.Ranks, "batch": asking.Batch, "pass": s.q.Pass()}
		return wire.Task{}, effect{err: err, events: []event{limitedLine(logrus.WarnLevel, fields, "GetTask refused: %v", err)}}
	case err != nil:
		return wire.Task{}, effect{err: err}
	}
	e := s.q.Entry(task)
	fields := logrus.Fields{"task": task, "epoch": epoch, "pass": s.q.Pass(), "trainer": trainer}
	if e.Group.Ranks > 0 {
		fields["rank"] = e.Rank
	} else {
		fields["timeout"] = e.Deadline.Sub(e.Dispatched).Round(time.Millisecond)
	}
	reply := s.taskReply(task, epoch, e)
	dispatched := logLine(logrus.DebugLevel, fields, "task dispatched")
	dispatched.tell = notice{kind: tellDispatched, trainer: trainer, task: s.taskEvent(taskqueue.Record{Index: task, Entry: e}, now)}
	events := []event{dispatched}
	if relieved != nil {
		events = append(events, reliefEvent(relieved, reply, trainer))
	}
	if cut != nil {
		cutFields := logrus.Fields{"task": cut.Task, "cut": cut.At, "piece": cut.Piece, "pass": reply.Pass, "rank": e.Rank, "trainer": trainer}
		events = append(events, logLine(logrus.InfoLevel, cutFields, "group tail: task %d cut at %d for rank %d's share; piece %d has the rest", cut.Task, cut.At, e.Rank, cut.Piece))
	}
	return reply, effect{change: ch, events: events}
}

// taskReply is GetTask's answer for the dispatch epoch of a pending task
// (or piece) whose entry is e. Called with s.mu held.
func (s *datasetService) taskReply(task, epoch int, e taskqueue.Entry) wire.Task {
	reply := wire.Task{Index: task, Epoch: epoch, Pass: s.q.Pass(), Blocks: s.ds.Blocks(e.Of), Seed: s.taskSeed(e.Of),
		From: e.Progress, To: e.To, Gen: s.q.Gen().Gen}
	if s.name != wire.DefaultDataset {
		reply.Dataset = s.name // empty for train: the replies of today's contract are unchanged
	}
	if every := s.q.ProgressEvery(task); every != wire.DefaultProgressInterval {
		reply.ProgressMillis = every.Milliseconds() // 0 says the default, as to a client of an older master
	}
	if s.ds.IsRange() {
		reply.Start, reply.End = s.ds.Range(e.Of)
	}
	if task != e.Of {
		reply.Piece, reply.Of = true, e.Of
	}
	if g := e.Group; g.Ranks > 0 {
		share := g.Share(s.q.PassRecords(), e.Rank)
		reply.Rank, reply.Ranks, reply.Batch = e.Rank, g.Ranks, g.Batch
		reply.RankRecords, reply.RankBatches, reply.RankLeft = share, g.Batches(s.q.PassRecords()), share-s.q.Handed(e.Rank)
	}
	return reply
}

// reliefEvent is the event of the dispatch of reply to trainer that
// relieved the straggler r.
func reliefEvent(r *taskqueue.Relief, reply wire.Task, trainer string) event {
	fields := logrus.Fields{"task": r.Task, "epoch": r.Epoch, "pass": reply.Pass, "holder": r.Holder,
		"overdue": fmt.Sprintf("%.1fx", r.Overdue), "trainer": trainer}
	var ev event
	if r.Kind == taskqueue.StragglersSplit {
		fields["reached"], fields["cut"], fields["piece"], fields["to"] = r.Reached, r.Cut, reply.Index, reply.To
		ev = logLine(logrus.InfoLevel, fields, "straggler split: task %d keeps its records up to %d, piece %d has the rest", r.Task, r.Cut, reply.Index)
	} else {
		fields["backup_epoch"] = reply.Epoch
		ev = logLine(logrus.InfoLevel, fields, "straggler backed up: task %d dispatched again; the first finish wins", r.Task)
	}
	ev.tell = notice{kind: tellRelieved, trainer: trainer, relief: r.Kind}
	return ev
}

// TaskFinished records a finish report.
func (s *datasetService) TaskFinished(ctx context.Context, t wire.Task) (wire.Report, error) {
	s.called(&t)
	return durable(s, func() (wire.Report, effect, error) {
		if err := s.readyWithDataset(ctx); err != nil {
			return 0, effect{}, err
		}
		return s.finish(t)
	})
}

// finish records a finish report in memory. Called with s.mu held.
func (s *datasetService) finish(t wire.Task) (wire.Report, effect, error) {
	if rep, eff, stale := s.staleGen(t.Index, t.Pass, t.Gen, t.Trainer); stale {
		return rep, eff, nil
	}
	now := s.cfg.Clock.Now()
	rep, ch, err := s.q.Finish(t.Index, t.Pass, t.Epoch, t.Trainer, now)
	fields := logrus.Fields{"task": t.Index, "epoch": t.Epoch, "pass": t.Pass, "trainer": t.Trainer}
	if err != nil || rep != wire.Recorded {
		return rep, effect{change: ch, events: []event{logLine(logrus.DebugLevel, fields, "finish report ignored: %v", rep)}}, err
	}
	finished := logLine(logrus.DebugLevel, fields, "task finished")
	ev := s.taskEvent(ch.Records[0], now)
	ev.Epoch = t.Epoch
	finished.tell = notice{kind: tellFinished, trainer: t.Trainer, task: ev}
	return rep, effect{change: ch, events: append([]event{finished}, s.passEvents(ch)...)}, nil
}

// TaskFailed records a failure report; the reason is kept and logged cut
// to wire.MaxErrorBytes.
func (s *datasetService) TaskFailed(ctx context.Context, t wire.Task) (wire.Report, error) {
	s.called(&t)
	return durable(s, func() (wire.Report, effect, error) {
		if err := s.readyWithDataset(ctx); err != nil {
			return 0, effect{}, err
		}
		if rep, eff, stale := s.staleGen(t.Index, t.Pass, t.Gen, t.Trainer); stale {
			return rep, eff, nil
		}
		rep, ch, err := s.q.Fail(t.Index, t.Pass, t.Epoch, t.Trainer, t.Error)
		if err != nil || rep != wire.Recorded {
			fields := logrus.Fields{"task": t.Index, "epoch": t.Epoch, "pass": t.Pass, "trainer": t.Trainer, "reason": wire.CutReason(t.Error)}
			return rep, effect{change: ch, events: []event{limitedLine(logrus.InfoLevel, fields, "failure report ignored: %v", rep)}}, err
		}
		return rep, effect{change: ch, events: s.retryEvents(ch, t.Trainer, CauseFailed)}, nil
	})
}

// TaskProgress records how far the current dispatch of a task got
// (wire.Progress), as its holder reports it (taskqueue: others are
// answered superseded), and answers where it is to stop.
func (s *datasetService) TaskProgress(ctx context.Context, p wire.Progress) (wire.ProgressReply, error) {
	t := wire.Task{Index: p.Index, Epoch: p.Epoch, Pass: p.Pass, Trainer: p.Trainer}
	s.called(&t)
	return durable(s, func() (wire.ProgressReply, effect, error) {
		if err := s.readyWithDataset(ctx); err != nil {
			return wire.ProgressReply{}, effect{}, err
		}
		if rep, eff, stale := s.staleGen(p.Index, p.Pass, p.Gen, t.Trainer); stale {
			return wire.ProgressReply{Report: rep}, eff, nil
		}
		reply, ch, err := s.q.Progress(p.Index, p.Pass, p.Epoch, p.Done, t.Trainer, s.cfg.Clock.Now())
		fields := logrus.Fields{"task": p.Index, "epoch": p.Epoch, "pass": p.Pass, "trainer": t.Trainer, "done": p.Done}
		line := logLine(logrus.DebugLevel, fields, "progress report: %v", reply.Report)
		if reply.To > 0 {
			fields["to"] = reply.To
			if p.Done > reply.To {
				line = limitedLine(logrus.WarnLevel, fields, "task %d trained %d records past the end it was cut to before it learned it: they are trained twice", p.Index, p.Done-reply.To)
			}
		}
		return reply, effect{change: ch, events: []event{line}}, err
	})
}

// expire is the timer's callback: it sends the tasks whose deadline passed
// back to Todo (or Failed).
func (s *datasetService) expire() {
	_, err := durable(s, func() (struct{}, effect, error) {
		if s.closed || s.stale || s.q == nil {
			return struct{}{}, effect{}, errUnchanged
		}
		expired, ch := s.q.Expire(s.cfg.Clock.Now())
		if len(expired) == 0 {
			s.rearm()
			return struct{}{}, effect{}, errUnchanged
		}
		return struct{}{}, effect{change: ch, events: s.retryEvents(ch, "", CauseTimedOut)}, nil
	})
	if err != nil && !errors.Is(err, errUnchanged) {
		s.cfg.Log.WithError(err).Error("cannot commit task timeouts; will reload the state")
	}
}

// Status returns a summary of the queues once what it shows is durable: it
// reloads first after a failed commit, and waits for the changes in flight,
// so it never shows a state a crash could undo.
func (s *datasetService) Status(ctx context.Context) (wire.Status, error) {
	return durable(s, func() (wire.Status, effect, error) {
		if err := s.ready(ctx); err != nil || s.q == nil {
			return wire.Status{}, effect{}, err
		}
		return wire.Status{
			Dataset: s.name, Round: s.round, DatasetReported: true, Pass: s.q.Pass(), Passes: s.q.Passes(), AllDone: s.q.AllDone(), Tasks: s.q.NumTasks(),
			Todo: s.q.Count(taskqueue.Todo), Pending: s.q.Count(taskqueue.Pending),
			Done: s.q.Count(taskqueue.Done), Failed: s.q.Count(taskqueue.Failed),
			Records: s.ds.NumRecords(), RecordsDone: s.q.DoneRecords(),
		}, effect{}, nil
	})
}

// staleGen answers a report of a dispatch of another generation of the
// pass state than the current one (a rewind came since it was handed
// out): StalePass, changing nothing. Called with s.mu held.
func (s *datasetService) staleGen(task, pass, gen int, trainer string) (wire.Report, effect, bool) {
	if cur := s.q.Gen().Gen; gen != cur {
		fields := logrus.Fields{"task": task, "pass": pass, "gen": gen, "current_gen": cur, "trainer": trainer}
		return wire.StalePass, effect{events: []event{limitedLine(logrus.InfoLevel, fields, "report of a dispatch of generation %d ignored: the pass state was rewound since (generation %d)", gen, cur)}}, true
	}
	return 0, effect{}, false
}
