package master

import (
	"context"
	"slices"
	"sync"

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
	lost     func(error)   // stops the job, called from its own goroutine (storeFailed)
	limits   lineLimits    // the job's limiters of the lines clients cause

	buildMu sync.Mutex // guards the acceptance of a dataset: one build at a time, outside mu
	// mu guards the state below, and is held by every operation while it
	// changes the state and queues its change (durable).
	mu     sync.Mutex
	ds     *dataset.Dataset
	q      *taskqueue.Queues
	round  int  // the dataset's round (StartRound)
	stale  bool // a commit failed: reload before the next operation
	timer  Timer
	closed bool

	limit      groupLimit // of each group: the store's transaction
	groups     []*group   // changes waiting for the committer, oldest first
	waiting    int        // entries of the groups queued and in flight
	inFlight   bool       // the committer commits a group
	newest     *group     // the group of the last change, until the committer stops
	committing bool       // the committer runs (commitGroups)

	pres presence // the trainers' connections (presence.go)
}

func newDatasetService(cfg Config, name string, declared *wire.Dataset, store Store, lost func(error), limits lineLimits) *datasetService {
	cfg.Store, cfg.Log = store, cfg.Log.WithField("dataset", name)
	return &datasetService{cfg: cfg, name: name, declared: declared, lost: lost, limits: limits, pres: newPresence(),
		limit: groupLimitOf(cfg, store)}
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
		return wire.WithKind(ErrDeclaredDataset, err)
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
// task and passes where d gives them (zero: whatever the master chose, no
// end included).
func matches(spec, d wire.Dataset) bool {
	switch {
	case spec.Name != d.Name || spec.IsRange() != d.IsRange():
		return false
	case d.ChunksPerTask != 0 && d.ChunksPerTask != spec.ChunksPerTask:
		return false
	case d.Passes != 0 && d.Passes != spec.Passes || d.Endless && !spec.Endless:
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
		q, err := taskqueue.RestoreGen(s.queueConfig(snap.Dataset, snap.Round), snap.Dataset.NumTasks(), snap.Dataset.TaskRecords, snap.Pass, snap.Gen, snap.Entries, s.cfg.Clock.Now())
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

// stopLocked is Close with s.mu held.
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

// storeFailed handles a failed Store write: after a lost leadership the
// service stops; after any other failure it reloads before the next call.
// Called with s.mu held.
func (s *datasetService) storeFailed(err error) error {
	if !errors.Is(err, ErrLeadershipLost) {
		s.cfg.Log.WithError(err).Error("store write failed; the callers get the error and the state is reloaded before the next call")
		s.stale = true
		// Clients retry on this text: the master cannot serve the call now.
		return wire.WithKind(wire.ErrNotServing, err)
	}
	s.cfg.Log.WithError(err).Error("leadership lost: stopped serving, state dropped")
	s.stopLocked()
	go s.lost(err) // it takes the job's lock, then every dataset's
	return wire.WithKind(wire.ErrNotServing, err)
}

// ready reloads the state after a failed commit. Called with s.mu held.
func (s *datasetService) ready(ctx context.Context) error {
	if s.closed {
		return wire.ErrNotServing
	}
	if s.stale {
		if err := s.reload(ctx); err != nil {
			return wire.WithKind(wire.ErrNotServing, err)
		}
	}
	return nil
}

// readyWithDataset is ready, then refuses a call when no dataset is
// accepted yet. Called with s.mu held.
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

// progress describes the queues for a log line. Called with s.mu held.
func (s *datasetService) progress() logrus.Fields {
	return logrus.Fields{"pass": s.q.Pass(), "todo": s.q.Count(taskqueue.Todo), "pending": s.q.Count(taskqueue.Pending),
		"done": s.q.Count(taskqueue.Done), "failed": s.q.Count(taskqueue.Failed)}
}
