package master

import (
	"context"
	"sync"
	"time"

	"github.com/pkg/errors"
	"github.com/sirupsen/logrus"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/rendezvous"
)

// The job's rendezvous runs (internal/rendezvous, go/wire/rendezvous.go).
// A run changes under rdzv.mu; a change of its members, round or closing
// is stored (RendezvousStore) before its caller is answered, and a call
// whose write fails changes nothing. A poll that only renews a node's
// heartbeat is not stored: a new leader gives every member a whole grace
// from its restore, as it gives a dispatch its timeout.

// RendezvousStore keeps the job's rendezvous runs. The service calls it
// one call at a time.
type RendezvousStore interface {
	// SaveRun stores run id whole, fenced.
	SaveRun(ctx context.Context, id string, run rendezvous.Run) error
	// LoadRuns returns the stored runs, by ID.
	LoadRuns(ctx context.Context) (map[string]rendezvous.Run, error)
	// DeleteRun removes run id, fenced.
	DeleteRun(ctx context.Context, id string) error
}

// MemoryRuns is a RendezvousStore in memory.
type MemoryRuns struct {
	mu   sync.Mutex // guards runs
	runs map[string]rendezvous.Run
}

// SaveRun implements RendezvousStore.
func (m *MemoryRuns) SaveRun(_ context.Context, id string, run rendezvous.Run) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.runs == nil {
		m.runs = map[string]rendezvous.Run{}
	}
	m.runs[id] = run.Clone()
	return nil
}

// DeleteRun implements RendezvousStore.
func (m *MemoryRuns) DeleteRun(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.runs, id)
	return nil
}

// LoadRuns implements RendezvousStore.
func (m *MemoryRuns) LoadRuns(context.Context) (map[string]rendezvous.Run, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	runs := map[string]rendezvous.Run{}
	for id, run := range m.runs {
		runs[id] = run.Clone()
	}
	return runs, nil
}

// rendezvousRuns is the service's part that keeps the runs.
type rendezvousRuns struct {
	mu   sync.Mutex // guards runs; held across a run's write, so that writes follow changes
	runs map[string]rendezvous.Run
}

// loadRuns reads the stored runs, at Restore: every member's heartbeat
// counts from now.
func (s *Service) loadRuns(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, s.cfg.CommitTimeout)
	defer cancel()
	runs, err := s.cfg.Rendezvous.LoadRuns(cctx)
	if err != nil {
		return errors.WithMessage(err, "master: load the rendezvous runs")
	}
	now := s.cfg.Clock.Now()
	for id, run := range runs {
		run.Refresh(now)
		runs[id] = run
	}
	s.rdzv.mu.Lock()
	defer s.rdzv.mu.Unlock()
	s.rdzv.runs = runs
	return nil
}

// RendezvousJoin has a node join a run (rendezvous.Run.Join).
func (s *Service) RendezvousJoin(ctx context.Context, j wire.RendezvousJoin) (wire.RendezvousView, error) {
	cfg := rendezvous.Config{MinNodes: j.MinNodes, MaxNodes: j.MaxNodes,
		LastCall: time.Duration(j.LastCallMs) * time.Millisecond, Grace: time.Duration(j.GraceMs) * time.Millisecond}
	return s.onRun(ctx, j.RendezvousPoll, func(run *rendezvous.Run, now time.Time) error {
		return run.Join(now, j.Node, j.Token, j.Attempt, cfg)
	})
}

// RendezvousPoll renews a node's heartbeat and answers its view
// (rendezvous.Run.Poll).
func (s *Service) RendezvousPoll(ctx context.Context, p wire.RendezvousPoll) (wire.RendezvousView, error) {
	if v, beat, err := s.heartbeat(p); beat {
		return v, err
	}
	return s.onRun(ctx, p, func(run *rendezvous.Run, now time.Time) error {
		_, err := run.Poll(now, p.Node, p.Token)
		return err
	})
}

// heartbeat answers the poll p of a run that is not Due: it renews the
// node's heartbeat in place, with no copy of the run nor write, so that a
// poll costs the same in a round of 4,096 nodes as of 2. beat is false
// when the poll may change the run: onRun then takes it.
func (s *Service) heartbeat(p wire.RendezvousPoll) (v wire.RendezvousView, beat bool, err error) {
	if err := p.Check(); err != nil {
		return wire.RendezvousView{}, true, err
	}
	s.rdzv.mu.Lock()
	defer s.rdzv.mu.Unlock()
	now := s.cfg.Clock.Now()
	run, known := s.rdzv.runs[p.Run]
	if !known || run.Due(now) {
		return wire.RendezvousView{}, false, nil
	}
	view, err := run.Poll(now, p.Node, p.Token)
	s.rdzv.runs[p.Run] = run // its members are the kept run's; its counts' cache is new
	return viewOf(view), true, err
}

// RendezvousPublish records the store of a complete round, hosted by its
// rank 0.
func (s *Service) RendezvousPublish(ctx context.Context, p wire.RendezvousPublish) (wire.RendezvousView, error) {
	return s.onRun(ctx, p.RendezvousPoll, func(run *rendezvous.Run, now time.Time) error {
		return run.Publish(now, p.Node, p.Token, p.Store)
	})
}

// RendezvousClose closes a run.
func (s *Service) RendezvousClose(ctx context.Context, c wire.RendezvousClose) (wire.RendezvousView, error) {
	why := c.Why
	if len(why) > wire.MaxWhyBytes {
		why = why[:wire.MaxWhyBytes]
	}
	return s.onRun(ctx, c.RendezvousPoll, func(run *rendezvous.Run, now time.Time) error {
		if _, err := run.Poll(now, c.Node, c.Token); err != nil {
			return err
		}
		run.Close(now, "by node "+c.Node+": "+why)
		return nil
	})
}

// onRun applies op to a copy of run p.Run (a new run: at most
// wire.MaxRendezvous), stores the copy if op changed the run's members,
// round or closing, and keeps it once stored.
func (s *Service) onRun(ctx context.Context, p wire.RendezvousPoll, op func(*rendezvous.Run, time.Time) error) (wire.RendezvousView, error) {
	if err := p.Check(); err != nil {
		return wire.RendezvousView{}, err
	}
	s.rdzv.mu.Lock()
	defer s.rdzv.mu.Unlock()
	if s.rdzv.runs == nil {
		s.rdzv.runs = map[string]rendezvous.Run{}
	}
	now := s.cfg.Clock.Now()
	old, known := s.rdzv.runs[p.Run]
	if !known && len(s.rdzv.runs) >= wire.MaxRendezvous {
		if err := s.dropOverRun(ctx, now, p.Run); err != nil {
			return wire.RendezvousView{}, err
		}
	}
	run := old.Clone()
	if err := op(&run, now); err != nil {
		return wire.RendezvousView{}, err
	}
	if run.Last != old.Last {
		cctx, cancel := context.WithTimeout(ctx, s.cfg.CommitTimeout)
		err := s.cfg.Rendezvous.SaveRun(cctx, p.Run, run)
		cancel()
		if err != nil {
			return wire.RendezvousView{}, s.storeFailed(err, "store", p.Run)
		}
		for _, note := range run.TakeNotes() {
			s.cfg.Log.WithFields(logrus.Fields{"run": p.Run, "round": run.Round, "complete": run.Complete}).Infof("rendezvous %s: %s", p.Run, note)
		}
	}
	s.rdzv.runs[p.Run] = run
	return viewOf(run.View(p.Node)), nil
}

// dropOverRun makes room for run id among runs at wire.MaxRendezvous: it
// deletes the run Over the longest (closed, its nodes gone), or refuses
// id when none is. Called with rdzv.mu held.
func (s *Service) dropOverRun(ctx context.Context, now time.Time, id string) error {
	oldest := ""
	for name, run := range s.rdzv.runs {
		if run.Over(now) && (oldest == "" || run.Last.At.Before(s.rdzv.runs[oldest].Last.At)) {
			oldest = name
		}
	}
	if oldest == "" {
		return wire.WithKind(wire.ErrRendezvousFull, errors.Errorf("the master keeps %d runs, the most, none of them over (closed, its nodes gone); run %q is refused", len(s.rdzv.runs), id))
	}
	cctx, cancel := context.WithTimeout(ctx, s.cfg.CommitTimeout)
	defer cancel()
	if err := s.cfg.Rendezvous.DeleteRun(cctx, oldest); err != nil {
		return s.storeFailed(err, "delete", oldest)
	}
	s.cfg.Log.WithField("run", oldest).Infof("rendezvous %s dropped to make room for run %s: it was closed (%s), and none of its nodes calls any more", oldest, id, s.rdzv.runs[oldest].Last.Why)
	delete(s.rdzv.runs, oldest)
	return nil
}

// storeFailed is the error of a failed write of run id: the caller may
// retry at the leader (wire.ErrNotServing); a lost leadership ends the
// service's.
func (s *Service) storeFailed(err error, what, id string) error {
	if errors.Is(err, ErrLeadershipLost) {
		s.lost(err)
	}
	return wire.WithKind(wire.ErrNotServing, errors.WithMessagef(err, "master: %s rendezvous run %q", what, id))
}

// RendezvousRuns returns a copy of the runs, for the status page.
func (s *Service) RendezvousRuns() map[string]rendezvous.Run {
	s.rdzv.mu.Lock()
	defer s.rdzv.mu.Unlock()
	runs := make(map[string]rendezvous.Run, len(s.rdzv.runs))
	for id, run := range s.rdzv.runs {
		runs[id] = run.Clone()
	}
	return runs
}

func viewOf(v rendezvous.View) wire.RendezvousView {
	return wire.RendezvousView{Round: v.Round, Complete: v.Complete, Closed: v.Closed, Participant: v.Participant, Queued: v.Queued,
		Rank: v.Rank, World: v.World, Participants: v.Participants, Waiting: v.Waiting, Store: v.Store}
}
