package master

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/pkg/errors"
	"github.com/sirupsen/logrus"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/dataset"
	"github.com/trainmaster/master/internal/taskqueue"
)

// Config configures a Service. Zero fields take the defaults.
type Config struct {
	ChunksPerTask int              // chunks grouped into one task; default 10
	Queue         taskqueue.Config // passes and timeouts
	Store         Store            // default: a new MemoryStore
	Clock         Clock            // default: RealClock
	Log           logrus.FieldLogger
	// CommitTimeout bounds one Store call; default 10s.
	CommitTimeout time.Duration
	// GroupRecords caps the task entries of changes committed together in
	// one Store call; default 100, so that a group fits one etcd
	// transaction (128 operations by default) with the pass key.
	GroupRecords int
	// Lost is called, once and from its own goroutine, when the Store
	// reports ErrLeadershipLost: the service has already stopped answering.
	Lost func(error)
}

// ErrLeadershipLost is what a Store wraps when it rejects a write because this
// master no longer holds the lock. The service stops at once, keeps nothing
// of its state and answers every call with wire.TextNotServing.
var ErrLeadershipLost = errors.New("master: leadership lost")

// Defaults of Config.
const (
	DefaultChunksPerTask = 10
	DefaultGroupRecords  = 100
)

// Service is the master's state and the operations of the wire contract.
type Service struct {
	cfg Config

	buildMu sync.Mutex // one dataset build at a time, outside mu
	mu      sync.Mutex
	ds      *dataset.Dataset
	q       *taskqueue.Queues
	stale   bool // a commit failed: reload before the next operation
	timer   Timer
	closed  bool

	groups     []*group // changes waiting for the committer, oldest first
	newest     *group   // the group of the last change, until it is durable
	committing bool     // a caller or a goroutine is committing the groups
}

// New returns a Service; Restore loads any state the store already holds.
func New(cfg Config) (*Service, error) {
	if cfg.ChunksPerTask == 0 {
		cfg.ChunksPerTask = DefaultChunksPerTask
	}
	if cfg.ChunksPerTask < 0 {
		return nil, fmt.Errorf("master: chunks per task must be positive, not %d", cfg.ChunksPerTask)
	}
	if cfg.Store == nil {
		cfg.Store = NewMemoryStore()
	}
	if cfg.Clock == nil {
		cfg.Clock = RealClock{}
	}
	if cfg.Log == nil {
		cfg.Log = logrus.StandardLogger()
	}
	if cfg.CommitTimeout == 0 {
		cfg.CommitTimeout = 10 * time.Second
	}
	if cfg.GroupRecords <= 0 {
		cfg.GroupRecords = DefaultGroupRecords
	}
	if _, err := taskqueue.New(cfg.Queue, 1, func(int) int64 { return 1 }); err != nil {
		return nil, err // the queue configuration is checked up front
	}
	return &Service{cfg: cfg}, nil
}

// Restore loads the state held by the store, re-arming the deadlines of
// pending tasks with their remaining time.
func (s *Service) Restore(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reload(ctx)
}

func (s *Service) reload(ctx context.Context) error {
	snap, err := s.cfg.Store.Load(ctx)
	if err != nil {
		return errors.Wrap(err, "master: load state")
	}
	s.ds, s.q, s.stale = nil, nil, false
	if snap.Dataset != nil {
		q, err := taskqueue.Restore(s.cfg.Queue, snap.Dataset.NumTasks(), snap.Dataset.TaskRecords, snap.Pass, snap.Entries, s.cfg.Clock.Now())
		if err != nil {
			return errors.Wrap(err, "master: restore queues")
		}
		s.ds, s.q = snap.Dataset, q
		s.cfg.Log.WithFields(s.progress()).Info("state restored")
	}
	s.rearm()
	return nil
}

// Close stops the expiry timer and drops the state; the service answers
// every call with wire.TextNotServing afterwards.
func (s *Service) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopLocked()
}

func (s *Service) stopLocked() {
	s.closed = true
	s.ds, s.q = nil, nil
	s.failGroups(wire.ErrNotServing)
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
}

// ReportDataset accepts the dataset on the first successful call; later
// calls must report the same list.
func (s *Service) ReportDataset(ctx context.Context, patterns []string) error {
	s.buildMu.Lock()
	defer s.buildMu.Unlock()
	if done, err := s.checkReported(patterns); done {
		return err
	}
	start := s.cfg.Clock.Now()
	ds, err := dataset.Build(patterns, s.cfg.ChunksPerTask)
	if err != nil {
		return errors.Wrap(err, "master: dataset not accepted")
	}
	q, err := taskqueue.New(s.cfg.Queue, ds.NumTasks(), ds.TaskRecords)
	if err != nil {
		return errors.Wrap(err, "master: dataset not accepted")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.ready(ctx); err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, s.cfg.CommitTimeout)
	defer cancel()
	if err := s.cfg.Store.SaveDataset(cctx, ds); err != nil {
		return s.storeFailed(errors.Wrap(err, "master: save dataset"))
	}
	s.ds, s.q = ds, q
	s.cfg.Log.WithFields(logrus.Fields{
		"patterns": patterns, "files": len(ds.Files), "chunks": ds.NumChunks(), "tasks": ds.NumTasks(),
		"records": ds.NumRecords(), "took": s.cfg.Clock.Now().Sub(start).Round(time.Millisecond),
	}).Info("dataset accepted; pass 0 started")
	return nil
}

// checkReported answers a report when a dataset is already accepted.
func (s *Service) checkReported(patterns []string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ds == nil {
		return false, nil
	}
	if !slices.Equal(s.ds.Patterns, patterns) {
		return true, fmt.Errorf("master: dataset already reported as %q; this call reports %q", s.ds.Patterns, patterns)
	}
	return true, nil
}

// GetTask records the finish it carries, if any, then hands out a task;
// both changes are committed together before it replies.
func (s *Service) GetTask(ctx context.Context, finished wire.Task) (wire.Task, error) {
	s.mu.Lock()
	if err := s.readyWithDataset(ctx); err != nil {
		s.mu.Unlock()
		return wire.Task{}, err
	}
	var ch taskqueue.Change
	var logs []func()
	if finished.Epoch != 0 {
		_, fch, log, err := s.finish(finished)
		if err != nil {
			s.mu.Unlock()
			return wire.Task{}, err
		}
		ch, logs = fch, append(logs, log)
	}
	task, dch, log, err := s.dispatch()
	if err == nil {
		ch, logs = ch.Merge(dch), append(logs, log)
	}
	if werr := s.await(ch); werr != nil {
		return wire.Task{}, werr
	}
	for _, log := range logs {
		log()
	}
	return task, err
}

// dispatch hands out a task in memory; it returns the reply, the change and
// what to log once the change is durable.
func (s *Service) dispatch() (wire.Task, taskqueue.Change, func(), error) {
	task, epoch, ch, err := s.q.Dispatch(s.cfg.Clock.Now())
	switch {
	case errors.Is(err, taskqueue.ErrNoTask):
		return wire.Task{}, ch, nil, wire.ErrNoTask
	case errors.Is(err, taskqueue.ErrAllDone):
		return wire.Task{}, ch, nil, wire.ErrAllDone
	case err != nil:
		return wire.Task{}, ch, nil, err
	}
	e := s.q.Entry(task)
	fields := logrus.Fields{"task": task, "epoch": epoch, "pass": s.q.Pass(),
		"timeout": e.Deadline.Sub(e.Dispatched).Round(time.Millisecond)}
	reply := wire.Task{Index: task, Epoch: epoch, Pass: s.q.Pass(), Blocks: s.ds.Blocks(task)}
	return reply, ch, func() { s.cfg.Log.WithFields(fields).Debug("task dispatched") }, nil
}

// TaskFinished records a finish report.
func (s *Service) TaskFinished(ctx context.Context, t wire.Task) (wire.Report, error) {
	s.mu.Lock()
	if err := s.readyWithDataset(ctx); err != nil {
		s.mu.Unlock()
		return 0, err
	}
	rep, ch, log, err := s.finish(t)
	return s.reply(rep, ch, log, err)
}

// TaskFailed records a failure report.
func (s *Service) TaskFailed(ctx context.Context, t wire.Task) (wire.Report, error) {
	s.mu.Lock()
	if err := s.readyWithDataset(ctx); err != nil {
		s.mu.Unlock()
		return 0, err
	}
	rep, ch, err := s.q.Fail(t.Index, t.Pass, t.Epoch, t.Error)
	if err != nil || rep != wire.Recorded {
		fields := logrus.Fields{"task": t.Index, "epoch": t.Epoch, "pass": t.Pass, "reason": t.Error}
		return s.reply(rep, ch, func() { s.cfg.Log.WithFields(fields).Infof("failure report ignored: %v", rep) }, err)
	}
	return s.reply(rep, ch, s.changeLog(ch, "task failed"), nil)
}

// finish records a finish report in memory; it returns the report, the
// change and what to log once the change is durable.
func (s *Service) finish(t wire.Task) (wire.Report, taskqueue.Change, func(), error) {
	rep, ch, err := s.q.Finish(t.Index, t.Pass, t.Epoch, s.cfg.Clock.Now())
	fields := logrus.Fields{"task": t.Index, "epoch": t.Epoch, "pass": t.Pass}
	if err != nil || rep != wire.Recorded {
		return rep, ch, func() { s.cfg.Log.WithFields(fields).Debugf("finish report ignored: %v", rep) }, err
	}
	pass := s.passLog(ch)
	return rep, ch, func() {
		s.cfg.Log.WithFields(fields).Debug("task finished")
		pass()
	}, nil
}

// reply answers a report once its change is durable; it is called with
// s.mu held and releases it. A report refused with an error changed
// nothing.
func (s *Service) reply(rep wire.Report, ch taskqueue.Change, log func(), err error) (wire.Report, error) {
	if err != nil {
		s.mu.Unlock()
		return 0, err
	}
	if err := s.await(ch); err != nil {
		return 0, err
	}
	log()
	return rep, nil
}

// await commits a change made under s.mu, releases the lock and waits
// until the change, and everything the caller saw in memory, is durable.
func (s *Service) await(ch taskqueue.Change) error {
	g := s.enqueue(ch)
	s.rearm()
	if g != nil && !s.committing {
		s.committing = true
		s.commitThrough(g)
	}
	s.mu.Unlock()
	return g.wait()
}

// expire is the timer's callback.
func (s *Service) expire() {
	s.mu.Lock()
	if s.closed || s.stale || s.q == nil {
		s.mu.Unlock()
		return
	}
	expired, ch := s.q.Expire(s.cfg.Clock.Now())
	if len(expired) == 0 {
		s.rearm()
		s.mu.Unlock()
		return
	}
	log := s.changeLog(ch, "task timed out")
	if err := s.await(ch); err != nil {
		s.cfg.Log.WithError(err).Error("cannot commit task timeouts; will reload the state")
		return
	}
	log()
}

// storeFailed handles a failed Store write: after a lost leadership the
// service stops; after any other failure it reloads before the next call.
// Called with s.mu held.
func (s *Service) storeFailed(err error) error {
	if !errors.Is(err, ErrLeadershipLost) {
		s.cfg.Log.WithError(err).Error("store write failed; the callers get the error and the state is reloaded before the next call")
		s.stale = true
		// Clients retry on this text: the master cannot serve the call now.
		return errors.Errorf("%s: %v", wire.TextNotServing, err)
	}
	s.cfg.Log.WithError(err).Error("leadership lost: stopped serving, state dropped")
	s.stopLocked()
	if s.cfg.Lost != nil {
		go s.cfg.Lost(err)
	}
	return errors.Errorf("%s: %v", wire.TextNotServing, err)
}

// ready reloads the state after a failed commit.
func (s *Service) ready(ctx context.Context) error {
	if s.closed {
		return wire.ErrNotServing
	}
	if s.stale {
		if err := s.reload(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (s *Service) readyWithDataset(ctx context.Context) error {
	if err := s.ready(ctx); err != nil {
		return err
	}
	if s.q == nil {
		return wire.ErrNoDataset
	}
	return nil
}

// rearm schedules the expiry timer for the earliest pending deadline.
func (s *Service) rearm() {
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

// changeLog returns what to log once a change that sent tasks back to Todo
// or discarded them is durable; it reads the state now, under s.mu.
func (s *Service) changeLog(ch taskqueue.Change, what string) func() {
	var logs []func()
	for _, r := range ch.Records {
		fields := logrus.Fields{"task": r.Index, "pass": r.Pass, "timeouts": r.Timeouts, "reason": r.Error}
		if r.Queue == taskqueue.Failed {
			fields["blocks"] = s.ds.Blocks(r.Index)
			logs = append(logs, func() { s.cfg.Log.WithFields(fields).Warnf("%s too often; discarded for this pass", what) })
			continue
		}
		logs = append(logs, func() { s.cfg.Log.WithFields(fields).Infof("%s; back in todo", what) })
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
func (s *Service) passLog(ch taskqueue.Change) func() {
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

func (s *Service) progress() logrus.Fields {
	return logrus.Fields{"pass": s.q.Pass(), "todo": s.q.Count(taskqueue.Todo), "pending": s.q.Count(taskqueue.Pending),
		"done": s.q.Count(taskqueue.Done), "failed": s.q.Count(taskqueue.Failed)}
}

// Status returns a summary of the queues.
func (s *Service) Status() wire.Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.q == nil {
		return wire.Status{}
	}
	return wire.Status{
		DatasetReported: true, Pass: s.q.Pass(), Passes: s.q.Passes(), AllDone: s.q.AllDone(), Tasks: s.q.NumTasks(),
		Todo: s.q.Count(taskqueue.Todo), Pending: s.q.Count(taskqueue.Pending),
		Done: s.q.Count(taskqueue.Done), Failed: s.q.Count(taskqueue.Failed),
		Records: s.ds.NumRecords(), RecordsDone: s.q.DoneRecords(),
	}
}
