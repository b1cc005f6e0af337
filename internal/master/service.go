package master

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pkg/errors"
	"github.com/sirupsen/logrus"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/dataset"
	"github.com/trainmaster/master/internal/taskqueue"
)

// datasetService is the state of one dataset of the job and the operations
// of the wire contract on it; Service routes the calls to it by name. Its
// cfg is the job's, with Store the dataset's own.
type datasetService struct {
	cfg      Config
	name     string
	declared *wire.Dataset // the master's declaration; nil: the first report decides

	buildMu sync.Mutex // one dataset build at a time, outside mu
	mu      sync.Mutex
	ds      *dataset.Dataset
	q       *taskqueue.Queues
	round   int  // the dataset's round (StartRound)
	stale   bool // a commit failed: reload before the next operation
	timer   Timer
	closed  bool

	groups     []*group // changes waiting for the committer, oldest first
	newest     *group   // the group of the last change, until it is durable
	committing bool     // a caller or a goroutine is committing the groups

	pres presence // the trainers' connections (presence.go)
}

func newDatasetService(cfg Config, name string, declared *wire.Dataset, store Store) *datasetService {
	cfg.Store, cfg.Log = store, cfg.Log.WithField("dataset", name)
	return &datasetService{cfg: cfg, name: name, declared: declared, pres: newPresence()}
}

// Restore loads the state held by the store, re-arming the deadlines of
// pending tasks with their remaining time. With a declared dataset it
// accepts that dataset if the store holds none, and refuses a store that
// holds another (ErrDeclaredDataset).
func (s *datasetService) Restore(ctx context.Context) error {
	s.buildMu.Lock()
	defer s.buildMu.Unlock()
	build, err := s.restore(ctx)
	if err != nil || !build {
		return err
	}
	err = s.accept(ctx, *s.declared)
	if errors.Is(err, errNotAccepted) {
		return fmt.Errorf("%w: %w", ErrDeclaredDataset, err)
	}
	return err // a store failure: a later term may succeed
}

// restore reloads the state and reports whether the declared dataset is
// still to be built.
func (s *datasetService) restore(ctx context.Context) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.reload(ctx); err != nil {
		return false, err
	}
	switch {
	case s.declared == nil:
		return false, nil
	case s.ds == nil:
		return true, nil
	case !matches(s.ds.Spec(), *s.declared):
		return false, errors.Wrapf(ErrDeclaredDataset, "the store holds the dataset %s, this master declares %s", describeDataset(s.ds.Spec()), describeDataset(*s.declared))
	}
	return false, nil
}

// matches reports whether a declaration or report d describes the accepted
// dataset of spec: the same name, files or range; and the same chunks per
// task and passes where d gives them (zero: whatever the master chose).
func matches(spec, d wire.Dataset) bool {
	switch {
	case spec.Name != d.Name || spec.IsRange() != d.IsRange():
		return false
	case d.ChunksPerTask != 0 && d.ChunksPerTask != spec.ChunksPerTask:
		return false
	case d.Passes != 0 && d.Passes != spec.Passes:
		return false
	}
	return slices.Equal(spec.Patterns, d.Patterns) && spec.Records == d.Records && spec.RecordsPerTask == d.RecordsPerTask
}

// reload replaces the state with the store's, within CommitTimeout: a hung
// etcd read must not hold the service's lock for ever. Called with s.mu
// held.
func (s *datasetService) reload(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CommitTimeout)
	defer cancel()
	snap, err := s.cfg.Store.Load(ctx)
	if err != nil {
		return errors.WithMessagef(err, "master: load the state of dataset %q", s.name)
	}
	s.ds, s.q, s.round, s.stale = nil, nil, 0, false
	if snap.Dataset != nil {
		s.warnSeed(snap.Dataset)
		if snap.Dataset.Name == "" {
			snap.Dataset.Name = s.name // stored before named datasets
		}
		q, err := taskqueue.Restore(s.queueConfig(snap.Dataset, snap.Round), snap.Dataset.NumTasks(), snap.Dataset.TaskRecords, snap.Pass, snap.Entries, s.cfg.Clock.Now())
		if err != nil {
			return errors.WithMessagef(err, "master: restore the queues of dataset %q", s.name)
		}
		s.ds, s.q, s.round = snap.Dataset, q, snap.Round
		fields := s.progress()
		if snap.Pass > q.Pass() {
			fields["stored_pass"] = snap.Pass
			s.cfg.Log.WithFields(fields).Warnf("the stored state is at pass %d, past the %d passes configured: all passes done", snap.Pass, q.Passes())
		}
		s.cfg.Log.WithFields(fields).Info("state restored")
	}
	s.rearm()
	s.graceHolders()
	return nil
}

// accepted reports whether the service holds a dataset.
func (s *datasetService) accepted() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ds != nil
}

// Close stops the expiry timer and drops the state; the service answers
// every call with wire.ErrNotServing afterwards.
func (s *datasetService) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopLocked()
}

func (s *datasetService) stopLocked() {
	s.closed = true
	s.stopGraces()
	s.ds, s.q = nil, nil
	s.failGroups(wire.ErrNotServing)
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
}

// Report accepts the dataset d describes on the first successful call;
// later calls must describe the same one (matches). The files are indexed
// outside the lock; the dataset is saved only if none was accepted
// meanwhile. With a declared dataset a report is only compared with it:
// nothing it names is opened.
func (s *datasetService) Report(ctx context.Context, d wire.Dataset) error {
	if s.declared != nil {
		if !matches(*s.declared, d) {
			return errors.Errorf("master: this master serves the dataset %s it declares; this call reports %s", describeDataset(*s.declared), describeDataset(d))
		}
		return nil
	}
	// A report over the limits is refused before it waits for the build
	// lock, so that it is not held in memory meanwhile.
	if !d.IsRange() {
		if err := s.cfg.DatasetConfig.CheckReport(d.Patterns); err != nil {
			return fmt.Errorf("%w: %w", errNotAccepted, err)
		}
	}
	s.buildMu.Lock()
	defer s.buildMu.Unlock()
	if done, err := s.checkReported(ctx, d); done {
		return err
	}
	return s.accept(ctx, d)
}

// build builds the dataset d describes, a declaration the Service checked
// (checkDeclaration) before it got here.
func (s *datasetService) build(d wire.Dataset) (*dataset.Dataset, error) {
	var ds *dataset.Dataset
	var err error
	switch {
	case d.IsRange():
		ds, err = dataset.NewRange(d.Records, d.RecordsPerTask)
	default:
		chunks := d.ChunksPerTask
		if chunks == 0 {
			chunks = s.cfg.ChunksPerTask
		}
		ds, err = dataset.BuildWith(s.cfg.DatasetConfig, d.Patterns, chunks)
	}
	if err != nil {
		return nil, errors.WithMessagef(err, "master: dataset %q", d.Name)
	}
	ds.Name, ds.Passes, ds.ShuffleSeed = d.Name, d.Passes, s.cfg.ShuffleSeed
	return ds, nil
}

// accept builds the dataset d describes and saves it. Called with buildMu
// held.
func (s *datasetService) accept(ctx context.Context, d wire.Dataset) error {
	start := s.cfg.Clock.Now()
	ds, err := s.build(d)
	if err != nil {
		return fmt.Errorf("%w: %w", errNotAccepted, err)
	}
	q, err := taskqueue.New(s.queueConfig(ds, 0), ds.NumTasks(), ds.TaskRecords)
	if err != nil {
		return fmt.Errorf("%w: %w", errNotAccepted, err)
	}
	if done, err := s.saveDataset(ctx, ds, q); done {
		return err
	}
	fields := logrus.Fields{"dataset": s.name, "tasks": ds.NumTasks(), "records": ds.NumRecords(), "took": s.cfg.Clock.Now().Sub(start).Round(time.Millisecond)}
	if ds.IsRange() {
		fields["records_per_task"] = ds.RecordsPerTask
	} else {
		fields["patterns"], fields["files"], fields["chunks"] = quotePatterns(ds.Patterns), len(ds.Files), ds.NumChunks()
	}
	s.cfg.Log.WithFields(fields).Info("dataset accepted; pass 0 started")
	return nil
}

// checkReported answers a report when a dataset is already accepted,
// reloading first after a failed commit: a save whose reply was lost may
// have been applied.
func (s *datasetService) checkReported(ctx context.Context, d wire.Dataset) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.ready(ctx); err != nil {
		return true, err
	}
	return s.compareReported(d)
}

// compareReported answers a report when a dataset is already accepted.
// Called with s.mu held.
func (s *datasetService) compareReported(d wire.Dataset) (bool, error) {
	if s.ds == nil {
		return false, nil
	}
	if spec := s.ds.Spec(); !matches(spec, d) {
		return true, errors.Errorf("master: dataset already reported as %s; this call reports %s", describeDataset(spec), describeDataset(d))
	}
	return true, nil
}

// saveDataset stores an accepted dataset and starts serving it, unless one
// was accepted while it was built (a GetTask may have reloaded a save whose
// reply was lost, and dispatched from it: saving again would wipe that
// dispatch). done reports that the call is answered by err.
func (s *datasetService) saveDataset(ctx context.Context, ds *dataset.Dataset, q *taskqueue.Queues) (done bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.ready(ctx); err != nil {
		return true, err
	}
	if done, err := s.compareReported(ds.Spec()); done {
		return true, err
	}
	cctx, cancel := context.WithTimeout(ctx, s.cfg.CommitTimeout)
	defer cancel()
	if err := s.cfg.Store.SaveDataset(cctx, ds); err != nil {
		if errors.Is(err, ErrDatasetTooLarge) {
			return true, fmt.Errorf("%w: %w", errNotAccepted, err)
		}
		return true, s.storeFailed(errors.WithMessage(err, "master: save dataset"))
	}
	s.ds, s.q, s.round = ds, q, 0
	return false, nil
}

func (s *datasetService) GetTask(ctx context.Context, finished wire.Task) (wire.Task, error) {
	start := s.called(&finished)
	task, err := s.getTaskDurable(ctx, finished)
	s.cfg.Observer.GetTaskServed(s.cfg.Clock.Now().Sub(start), err)
	return task, err
}

func (s *datasetService) getTaskDurable(ctx context.Context, finished wire.Task) (wire.Task, error) {
	op, task, err := s.getTask(ctx, finished)
	if werr := s.complete(op); werr != nil {
		return wire.Task{}, werr
	}
	return task, err
}

// called tells the Observer of a call from the trainer t names, replacing
// that name by the one the master keeps, and returns the call's start.
func (s *datasetService) called(t *wire.Task) time.Time {
	now := s.cfg.Clock.Now()
	t.Trainer = wire.TrainerName(t.Trainer)
	s.cfg.Observer.Called(t.Trainer, now)
	return now
}

// event describes the task of r for the Observer. Called with s.mu held.
func (s *datasetService) event(r taskqueue.Record, at time.Time) TaskEvent {
	return TaskEvent{Dataset: s.name, Index: r.Index, Pass: r.Pass, Epoch: r.Epoch, Records: s.q.Length(r.Entry), At: at}
}

// getTask makes GetTask's changes in memory and queues them for commit.
func (s *datasetService) getTask(ctx context.Context, finished wire.Task) (op, wire.Task, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.readyWithDataset(ctx); err != nil {
		return op{}, wire.Task{}, err
	}
	var ch taskqueue.Change
	var logs []func()
	var f taskqueue.Finished
	if finished.Epoch != 0 {
		rep, fch, log, err := s.finish(finished)
		if err != nil {
			return op{}, wire.Task{}, err
		}
		ch, logs = fch, append(logs, log)
		f = taskqueue.Finished{Task: finished.Index, Epoch: finished.Epoch, Pass: finished.Pass}
		if rep == wire.AlreadyDone || rep == wire.StalePass {
			if task, epoch, ok := s.q.Resend(finished.Trainer, f); ok {
				reply := s.taskReply(task, epoch)
				fields := logrus.Fields{"task": task, "epoch": epoch, "pass": reply.Pass, "trainer": finished.Trainer, "finished": finished.Index}
				return s.queue(ch, append(logs, func() {
					s.cfg.Log.WithFields(fields).Info("GetTask retried after its answer was lost: the same task handed again")
				})...), reply, nil
			}
		}
	}
	task, dch, log, err := s.dispatch(finished.Trainer, f)
	if err == nil {
		ch, logs = ch.Merge(dch), append(logs, log)
	}
	return s.queue(ch, logs...), task, err
}

// dispatch hands out a task to trainer, for a GetTask that carried the
// finish f, in memory; it returns the reply, the change and what to log
// once the change is durable.
func (s *datasetService) dispatch(trainer string, f taskqueue.Finished) (wire.Task, taskqueue.Change, func(), error) {
	now := s.cfg.Clock.Now()
	task, epoch, ch, relieved, err := s.q.DispatchFor(now, trainer, f)
	switch {
	case errors.Is(err, taskqueue.ErrNoTask):
		return wire.Task{}, ch, nil, wire.ErrNoTask
	case errors.Is(err, taskqueue.ErrAllDone):
		return wire.Task{}, ch, nil, wire.ErrAllDone
	case err != nil:
		return wire.Task{}, ch, nil, err
	}
	e := s.q.Entry(task)
	fields := logrus.Fields{"task": task, "epoch": epoch, "pass": s.q.Pass(), "trainer": trainer,
		"timeout": e.Deadline.Sub(e.Dispatched).Round(time.Millisecond)}
	reply := s.taskReply(task, epoch)
	ev := s.event(taskqueue.Record{Index: task, Entry: e}, now)
	relief := s.reliefLog(relieved, reply, trainer)
	return reply, ch, func() {
		s.cfg.Log.WithFields(fields).Debug("task dispatched")
		s.cfg.Observer.Dispatched(trainer, ev)
		relief()
	}, nil
}

// taskReply is GetTask's answer for the dispatch epoch of a pending task
// (or piece). Called with s.mu held.
func (s *datasetService) taskReply(task, epoch int) wire.Task {
	e := s.q.Entry(task)
	reply := wire.Task{Index: task, Epoch: epoch, Pass: s.q.Pass(), Blocks: s.ds.Blocks(e.Of), Seed: s.taskSeed(e.Of),
		From: e.Progress, To: e.To}
	if s.name != wire.DefaultDataset {
		reply.Dataset = s.name // empty for train: the replies of today's contract are unchanged
	}
	if s.ds.IsRange() {
		reply.Start, reply.End = s.ds.Range(e.Of)
	}
	if task != e.Of {
		reply.Piece, reply.Of = true, e.Of
	}
	return reply
}

// reliefLog returns what to log, and tell the Observer, once the dispatch
// of reply to trainer that relieved a straggler (r; nil: none) is durable.
func (s *datasetService) reliefLog(r *taskqueue.Relief, reply wire.Task, trainer string) func() {
	if r == nil {
		return func() {}
	}
	fields := logrus.Fields{"task": r.Task, "epoch": r.Epoch, "pass": reply.Pass, "holder": r.Holder,
		"overdue": fmt.Sprintf("%.1fx", r.Overdue), "trainer": trainer}
	if r.Kind == taskqueue.StragglersSplit {
		fields["reached"], fields["cut"], fields["piece"], fields["to"] = r.Reached, r.Cut, reply.Index, reply.To
		return func() {
			s.cfg.Log.WithFields(fields).Infof("straggler split: task %d keeps its records up to %d, piece %d has the rest", r.Task, r.Cut, reply.Index)
			s.cfg.Observer.Relieved(trainer, r.Kind)
		}
	}
	fields["backup_epoch"] = reply.Epoch
	return func() {
		s.cfg.Log.WithFields(fields).Infof("straggler backed up: task %d dispatched again; the first finish wins", r.Task)
		s.cfg.Observer.Relieved(trainer, r.Kind)
	}
}

// TaskFinished records a finish report.
func (s *datasetService) TaskFinished(ctx context.Context, t wire.Task) (wire.Report, error) {
	s.called(&t)
	return s.report(ctx, func() (wire.Report, taskqueue.Change, func(), error) { return s.finish(t) })
}

// TaskFailed records a failure report; the reason is kept and logged cut
// to wire.MaxErrorBytes.
func (s *datasetService) TaskFailed(ctx context.Context, t wire.Task) (wire.Report, error) {
	s.called(&t)
	return s.report(ctx, func() (wire.Report, taskqueue.Change, func(), error) {
		rep, ch, err := s.q.Fail(t.Index, t.Pass, t.Epoch, t.Error)
		if err != nil || rep != wire.Recorded {
			fields := logrus.Fields{"task": t.Index, "epoch": t.Epoch, "pass": t.Pass, "trainer": t.Trainer, "reason": wire.CutReason(t.Error)}
			return rep, ch, func() { s.cfg.Log.WithFields(fields).Infof("failure report ignored: %v", rep) }, err
		}
		return rep, ch, s.changeLog(ch, t.Trainer, CauseFailed), nil
	})
}

// TaskProgress records how far the current dispatch of a task got
// (wire.Progress), and answers where it is to stop.
func (s *datasetService) TaskProgress(ctx context.Context, p wire.Progress) (wire.ProgressReply, error) {
	t := wire.Task{Index: p.Index, Epoch: p.Epoch, Pass: p.Pass, Trainer: p.Trainer}
	s.called(&t)
	var reply wire.ProgressReply
	_, err := s.report(ctx, func() (wire.Report, taskqueue.Change, func(), error) {
		var ch taskqueue.Change
		var err error
		reply, ch, err = s.q.Progress(p.Index, p.Pass, p.Epoch, p.Done, s.cfg.Clock.Now())
		fields := logrus.Fields{"task": p.Index, "epoch": p.Epoch, "pass": p.Pass, "trainer": t.Trainer, "done": p.Done}
		if reply.To > 0 {
			fields["to"] = reply.To
		}
		return reply.Report, ch, func() {
			if reply.To > 0 && p.Done > reply.To {
				s.cfg.Log.WithFields(fields).Warnf("task %d trained %d records past the end it was cut to before it learned it: they are trained twice", p.Index, p.Done-reply.To)
				return
			}
			s.cfg.Log.WithFields(fields).Debugf("progress report: %v", reply.Report)
		}, err
	})
	if err != nil {
		return wire.ProgressReply{}, err
	}
	return reply, nil
}

// report runs a report's change in memory under the lock, then answers it
// once the change is durable. A report refused with an error changed
// nothing.
func (s *datasetService) report(ctx context.Context, change func() (wire.Report, taskqueue.Change, func(), error)) (wire.Report, error) {
	o, rep, err := s.reportChange(ctx, change)
	if err != nil {
		return 0, err
	}
	if err := s.complete(o); err != nil {
		return 0, err
	}
	return rep, nil
}

func (s *datasetService) reportChange(ctx context.Context, change func() (wire.Report, taskqueue.Change, func(), error)) (op, wire.Report, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.readyWithDataset(ctx); err != nil {
		return op{}, 0, err
	}
	rep, ch, log, err := change()
	if err != nil {
		return op{}, 0, err
	}
	return s.queue(ch, log), rep, nil
}

// finish records a finish report in memory; it returns the report, the
// change and what to log once the change is durable.
func (s *datasetService) finish(t wire.Task) (wire.Report, taskqueue.Change, func(), error) {
	now := s.cfg.Clock.Now()
	rep, ch, err := s.q.Finish(t.Index, t.Pass, t.Epoch, t.Trainer, now)
	fields := logrus.Fields{"task": t.Index, "epoch": t.Epoch, "pass": t.Pass, "trainer": t.Trainer}
	if err != nil || rep != wire.Recorded {
		return rep, ch, func() { s.cfg.Log.WithFields(fields).Debugf("finish report ignored: %v", rep) }, err
	}
	ev := s.event(ch.Records[0], now)
	ev.Epoch = t.Epoch
	pass := s.passLog(ch)
	return rep, ch, func() {
		s.cfg.Log.WithFields(fields).Debug("task finished")
		s.cfg.Observer.Finished(t.Trainer, ev)
		pass()
	}, nil
}

// expire is the timer's callback.
func (s *datasetService) expire() {
	o, ok := s.expireChange()
	if !ok {
		return
	}
	if err := s.complete(o); err != nil {
		s.cfg.Log.WithError(err).Error("cannot commit task timeouts; will reload the state")
	}
}

// expireChange sends the tasks whose deadline passed back to Todo (or
// Failed) in memory; ok is false when none did.
func (s *datasetService) expireChange() (op, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.stale || s.q == nil {
		return op{}, false
	}
	expired, ch := s.q.Expire(s.cfg.Clock.Now())
	if len(expired) == 0 {
		s.rearm()
		return op{}, false
	}
	return s.queue(ch, s.changeLog(ch, "", CauseTimedOut)), true
}

// storeFailed handles a failed Store write: after a lost leadership the
// service stops; after any other failure it reloads before the next call.
// Called with s.mu held.
func (s *datasetService) storeFailed(err error) error {
	if !errors.Is(err, ErrLeadershipLost) {
		s.cfg.Log.WithError(err).Error("store write failed; the callers get the error and the state is reloaded before the next call")
		s.stale = true
		// Clients retry on this text: the master cannot serve the call now.
		return fmt.Errorf("%w: %w", wire.ErrNotServing, err)
	}
	s.cfg.Log.WithError(err).Error("leadership lost: stopped serving, state dropped")
	s.stopLocked()
	if s.cfg.Lost != nil {
		go s.cfg.Lost(err)
	}
	return fmt.Errorf("%w: %w", wire.ErrNotServing, err)
}

// ready reloads the state after a failed commit. Called with s.mu held.
func (s *datasetService) ready(ctx context.Context) error {
	if s.closed {
		return wire.ErrNotServing
	}
	if s.stale {
		if err := s.reload(ctx); err != nil {
			return fmt.Errorf("%w: %w", wire.ErrNotServing, err)
		}
	}
	return nil
}

func (s *datasetService) readyWithDataset(ctx context.Context) error {
	if err := s.ready(ctx); err != nil {
		return err
	}
	if s.q == nil {
		return wire.ErrNoDataset
	}
	return nil
}

// rearm schedules the expiry timer for the earliest pending deadline.
// Called with s.mu held.
func (s *datasetService) rearm() {
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	if s.q == nil || s.closed {
		return
	}
	if at, ok := s.q.NextDeadline(); ok {
		s.timer = s.cfg.Clock.AfterFunc(max(at.Sub(s.cfg.Clock.Now()), 0), s.expire)
	}
}

// changeLog returns what to log, and tell the Observer, once a change that
// sent tasks back to Todo or discarded them is durable, after a failure
// reported by trainer or a timeout; it reads the state now, under s.mu.
func (s *datasetService) changeLog(ch taskqueue.Change, trainer string, cause RetryCause) func() {
	var logs []func()
	now := s.cfg.Clock.Now()
	for _, r := range ch.Records {
		fields := logrus.Fields{"task": r.Index, "pass": r.Pass, "timeouts": r.Timeouts, "reason": r.Error}
		if trainer != "" {
			fields["trainer"] = trainer
		}
		ev := s.event(r, now)
		ev.Timeouts, ev.Reason, ev.Discarded = r.Timeouts, r.Error, r.Queue == taskqueue.Failed
		if ev.Discarded {
			fields["blocks"] = s.ds.Blocks(r.Of)
			logs = append(logs, func() {
				s.cfg.Log.WithFields(fields).Warnf("task %s too often; discarded for this pass", cause)
				s.cfg.Observer.Retried(trainer, ev, cause)
			})
			continue
		}
		logs = append(logs, func() {
			s.cfg.Log.WithFields(fields).Infof("task %s; back in todo", cause)
			s.cfg.Observer.Retried(trainer, ev, cause)
		})
	}
	logs = append(logs, s.passLog(ch))
	return func() {
		for _, log := range logs {
			log()
		}
	}
}

// passLog returns what to log once a change that may have ended a pass is
// durable; it reads the state now, under s.mu.
func (s *datasetService) passLog(ch taskqueue.Change) func() {
	switch {
	case !ch.PassChanged:
		return func() {}
	case s.q.AllDone():
		passes := s.q.Passes()
		return func() { s.cfg.Log.WithField("passes", passes).Info("pass finished; all passes done") }
	}
	return func() {
		s.cfg.Log.WithField("pass", ch.Pass).Infof("pass %d finished; pass %d started", ch.Pass-1, ch.Pass)
	}
}

func (s *datasetService) progress() logrus.Fields {
	return logrus.Fields{"pass": s.q.Pass(), "todo": s.q.Count(taskqueue.Todo), "pending": s.q.Count(taskqueue.Pending),
		"done": s.q.Count(taskqueue.Done), "failed": s.q.Count(taskqueue.Failed)}
}

// Status returns a summary of the queues once what it shows is durable: it
// reloads first after a failed commit, and waits for the changes in flight,
// so it never shows a state a crash could undo.
func (s *datasetService) Status(ctx context.Context) (wire.Status, error) {
	o, st, err := s.status(ctx)
	if err != nil {
		return wire.Status{}, err
	}
	if err := s.complete(o); err != nil {
		return wire.Status{}, err
	}
	return st, nil
}

func (s *datasetService) status(ctx context.Context) (op, wire.Status, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.ready(ctx); err != nil {
		return op{}, wire.Status{}, err
	}
	if s.q == nil {
		return op{}, wire.Status{}, nil
	}
	return s.queue(taskqueue.Change{}), wire.Status{
		Dataset: s.name, Round: s.round, DatasetReported: true, Pass: s.q.Pass(), Passes: s.q.Passes(), AllDone: s.q.AllDone(), Tasks: s.q.NumTasks(),
		Todo: s.q.Count(taskqueue.Todo), Pending: s.q.Count(taskqueue.Pending),
		Done: s.q.Count(taskqueue.Done), Failed: s.q.Count(taskqueue.Failed),
		Records: s.ds.NumRecords(), RecordsDone: s.q.DoneRecords(),
	}, nil
}

// describeDataset names a declaration in an error or a log line, short
// whatever a client sent (its patterns by quotePatterns).
func describeDataset(d wire.Dataset) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%q: ", d.Name)
	if d.IsRange() {
		fmt.Fprintf(&b, "%d records in tasks of %d", d.Records, d.RecordsPerTask)
	} else {
		b.WriteString("files " + quotePatterns(d.Patterns))
		if d.ChunksPerTask != 0 {
			fmt.Fprintf(&b, " in tasks of %d chunks", d.ChunksPerTask)
		}
	}
	if d.Passes != 0 {
		fmt.Fprintf(&b, ", passes a round: %d", d.Passes)
	}
	return b.String()
}

// quotePatterns names a list of patterns, which may come from a client, in
// an error or a log line, short whatever the list: at most three patterns,
// each cut by dataset.Quote, and how many there are.
func quotePatterns(patterns []string) string {
	const shown = 3
	quoted := make([]string, 0, shown)
	for _, p := range patterns[:min(len(patterns), shown)] {
		quoted = append(quoted, dataset.Quote(p))
	}
	if len(patterns) > shown {
		return fmt.Sprintf("[%s ...] (%d patterns)", strings.Join(quoted, " "), len(patterns))
	}
	return "[" + strings.Join(quoted, " ") + "]"
}
