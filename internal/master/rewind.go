package master

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/pkg/errors"
	"github.com/sirupsen/logrus"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/taskqueue"
)

// Rewind takes every dataset of the checkpoint r names back to it, once
// per restart: a dataset whose last rewind was this one (its mark) is
// left as it is, so that every rank of a restart, and its retries at a
// new leader, may call it.
func (s *Service) Rewind(ctx context.Context, r wire.Rewind) (wire.RewindReply, error) {
	if err := r.Check(); err != nil {
		return wire.RewindReply{}, err
	}
	s.cps.takeMu.Lock()
	defer s.cps.takeMu.Unlock()
	cp, err := s.keptCheckpoint(r.ID)
	if err != nil {
		return wire.RewindReply{}, err
	}
	mark := fmt.Sprintf("checkpoint %d, restart %s", r.ID, r.Restart)
	var reply wire.RewindReply
	for _, name := range slices.Sorted(maps.Keys(cp.Datasets)) {
		d, err := s.dataset(ctx, name, false)
		if err != nil {
			return wire.RewindReply{}, errors.WithMessagef(err, "master: rewind dataset %q to checkpoint %d", name, r.ID)
		}
		rewound, err := d.rewind(ctx, cp.Datasets[name], mark)
		if err != nil {
			return wire.RewindReply{}, err
		}
		if rewound {
			s.cfg.Observer.Rewound(d.rewoundEvent(r.ID))
		}
		reply.Rewound = reply.Rewound || rewound
		reply.Datasets = append(reply.Datasets, name)
	}
	return reply, nil
}

// keptCheckpoint returns the kept checkpoint id, or an error carrying
// wire.TextUnknownCheckpoint that names the kept ones.
func (s *Service) keptCheckpoint(id int64) (DataCheckpoint, error) {
	s.cps.mu.Lock()
	defer s.cps.mu.Unlock()
	var ids []string
	for _, cp := range s.cps.kept {
		if cp.ID == id {
			return cp, nil
		}
		ids = append(ids, fmt.Sprint(cp.ID))
	}
	kept := "none"
	if len(ids) > 0 {
		kept = strings.Join(ids, ", ")
	}
	return DataCheckpoint{}, wire.WithKind(wire.ErrUnknownCheckpoint, errors.Errorf("checkpoint %d is not kept (kept: %s)", id, kept))
}

// trained returns what of the dataset's current pass is trained, for each
// list of positions held (one per checkpoint), and false for a dataset not
// accepted yet. It reads the state in memory without waiting for the
// commits in flight: what a change not durable yet says trained (a
// finish, a progress report) its trainer did train, whatever becomes of
// the commit, so a checkpoint holding it is true of the model saved. The
// checkpoint's wait is then its own write alone.
func (s *datasetService) trained(ctx context.Context, helds [][]wire.Held) ([]DatasetPoint, bool, error) {
	ps, events, err := s.readTrained(ctx, helds)
	s.emit(events)
	return ps, ps != nil, err
}

// readTrained is trained's read, under s.mu; nil points for a dataset not
// accepted yet.
func (s *datasetService) readTrained(ctx context.Context, helds [][]wire.Held) ([]DatasetPoint, []event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.ready(ctx); err != nil || s.q == nil {
		return nil, nil, err
	}
	var events []event
	ps := make([]DatasetPoint, len(helds))
	for i, held := range helds {
		positions := make([]taskqueue.HeldPosition, len(held))
		for j, h := range held {
			positions[j] = taskqueue.HeldPosition{Task: h.Index, Epoch: h.Epoch, Pass: h.Pass, Gen: h.Gen, Done: h.Done}
		}
		t, notes := s.q.Trained(positions)
		for _, note := range notes {
			events = append(events, limitedLine(logrus.WarnLevel, logrus.Fields{"pass": t.Pass}, "checkpoint: %s", note))
		}
		ps[i] = DatasetPoint{Round: s.round, Gen: s.q.Gen().Gen, Tasks: s.q.NumTasks(), Records: t.Records(s.ds.TaskRecords), Trained: t}
	}
	return ps, events, nil
}

// generation returns the generation of the dataset's pass state, and
// false for a dataset not accepted yet.
func (s *datasetService) generation() (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.q == nil {
		return 0, false
	}
	return s.q.Gen().Gen, true
}

// rewind takes the dataset back to p in a new generation marked mark,
// unless its last rewind was that one; it reports whether it rewound.
func (s *datasetService) rewind(ctx context.Context, p DatasetPoint, mark string) (bool, error) {
	return durable(s, func() (bool, effect, error) {
		if err := s.readyWithDataset(ctx); err != nil {
			return false, effect{}, err
		}
		if s.q.Gen().Mark == mark {
			return false, effect{}, nil
		}
		if p.Tasks != s.q.NumTasks() {
			return false, effect{}, wire.WithKind(wire.ErrBadCheckpoint, errors.Errorf("dataset %q had %d tasks at the checkpoint, %d now", s.name, p.Tasks, s.q.NumTasks()))
		}
		before := s.q.Pass()
		cur := s.q.Gen()
		gen := max(cur.Gen+1, cur.Reserved+1, int(s.cfg.Clock.Now().UnixMilli())) // never one a rewind may have written entries of
		ch, err := s.q.Rewind(p.Trained, mark, gen)
		if err != nil {
			return false, effect{}, err
		}
		s.round = p.Round
		fields := logrus.Fields{"pass": s.q.Pass(), "from_pass": before, "gen": gen, "trained": p.Records, "left": s.q.Gen().Left, "round": p.Round}
		line := logLine(logrus.InfoLevel, fields, "rewound to %s: pass %d again from what it held trained (%d records), %d records to train; reports of earlier dispatches are stale", mark, p.Trained.Pass, p.Records, s.q.Gen().Left)
		events := []event{line}
		if s.q.Pass() != p.Trained.Pass { // the checkpoint held its whole pass trained
			events = append(events, s.passEvents(ch)...)
		}
		return true, effect{change: ch, events: events}, nil
	})
}
