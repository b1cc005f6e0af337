package master

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/pkg/errors"
	"github.com/sirupsen/logrus"

	"github.com/trainmaster/master/go/wire"
)

// Data checkpoints of the job (wire's checkpoint.go). The trainers of a
// checkpoint report to it by name; the last report takes it: every
// dataset's Trained, read once every change before it is durable, stored
// under the next ID with the older checkpoints past CheckpointsKept
// dropped in the same fenced write. Taking checkpoints and rewinding are
// one at a time (checkpoints.takeMu), so IDs follow each other and a
// rewind never interleaves with a take.

// maxOpenCheckpoints bounds the checkpoints gathering reports at once:
// names a client invents cannot grow the master without end.
const maxOpenCheckpoints = 16

// checkpoints is the service's part that keeps the data checkpoints.
type checkpoints struct {
	takeMu sync.Mutex // one take or rewind at a time

	mu   sync.Mutex            // guards the fields below
	open map[string]*gathering // checkpoints gathering reports, by name
	kept []DataCheckpoint      // the stored ones, by ID ascending (loaded by Restore)
	next int64                 // the next ID
}

// gathering is a checkpoint waiting for its trainers' reports.
type gathering struct {
	trainers int
	pin      bool
	held     map[string][]wire.Held // trainer -> what it reported
	done     chan struct{}          // closed once reply and err are set
	reply    wire.CheckpointReply
	err      error
	timer    Timer
}

func (g *gathering) finish(reply wire.CheckpointReply, err error) {
	g.reply, g.err = reply, err
	g.timer.Stop()
	close(g.done)
}

// loadCheckpoints reads the stored checkpoints, at Restore.
func (s *Service) loadCheckpoints(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, s.cfg.CommitTimeout)
	defer cancel()
	kept, err := s.cfg.Checkpoints.LoadCheckpoints(cctx)
	if err != nil {
		return errors.WithMessage(err, "master: load the data checkpoints")
	}
	s.cps.mu.Lock()
	defer s.cps.mu.Unlock()
	s.cps.kept, s.cps.next = kept, 1
	if n := len(kept); n > 0 {
		s.cps.next = kept[n-1].ID + 1
	}
	return nil
}

// Checkpoint takes part in the checkpoint c names: it reports c's held
// tasks and waits until every trainer of it reported (answered with the
// checkpoint's ID once stored), or CheckpointWait passed since the first
// report (TextCheckpointIncomplete).
func (s *Service) Checkpoint(ctx context.Context, c wire.Checkpoint) (wire.CheckpointReply, error) {
	if err := c.Check(); err != nil {
		return wire.CheckpointReply{}, err
	}
	c.Trainer = wire.TrainerName(c.Trainer)
	g, complete, err := s.report(c)
	if err != nil {
		return wire.CheckpointReply{}, err
	}
	if complete {
		reply, err := s.takeCheckpoint(ctx, c.Name, g)
		g.finish(reply, err)
	}
	select {
	case <-g.done:
		return g.reply, g.err
	case <-s.stopped:
		return wire.CheckpointReply{}, wire.ErrNotServing
	}
}

// report adds c to its gathering, opening it, and says whether c was the
// last report it waited for.
func (s *Service) report(c wire.Checkpoint) (*gathering, bool, error) {
	s.cps.mu.Lock()
	defer s.cps.mu.Unlock()
	if s.cps.open == nil {
		s.cps.open = map[string]*gathering{}
	}
	g := s.cps.open[c.Name]
	if g == nil {
		if len(s.cps.open) >= maxOpenCheckpoints && c.Trainers > 1 {
			return nil, false, wire.WithKind(wire.ErrCheckpointIncomplete, errors.Errorf("%d checkpoints are gathering reports, the most at once; %q is refused", len(s.cps.open), c.Name))
		}
		g = &gathering{trainers: c.Trainers, held: map[string][]wire.Held{}, done: make(chan struct{})}
		g.timer = s.cfg.Clock.AfterFunc(s.cfg.CheckpointWait, func() { s.expireGathering(c.Name, g) })
		s.cps.open[c.Name] = g
	}
	if g.trainers != c.Trainers {
		return nil, false, wire.WithKind(wire.ErrCheckpointIncomplete, errors.Errorf("trainer %s takes checkpoint %q with %d trainers, others with %d", c.Trainer, c.Name, c.Trainers, g.trainers))
	}
	g.held[c.Trainer] = c.Held
	g.pin = g.pin || c.Pin
	if len(g.held) < g.trainers {
		return g, false, nil
	}
	delete(s.cps.open, c.Name)
	return g, true, nil
}

// expireGathering fails a checkpoint whose trainers did not all report
// within CheckpointWait.
func (s *Service) expireGathering(name string, g *gathering) {
	s.cps.mu.Lock()
	defer s.cps.mu.Unlock()
	if s.cps.open[name] != g {
		return // complete
	}
	delete(s.cps.open, name)
	reported := slices.Sorted(maps.Keys(g.held))
	err := wire.WithKind(wire.ErrCheckpointIncomplete, errors.Errorf("%d of the %d trainers of checkpoint %q reported within %v (%s); nothing was stored",
		len(reported), g.trainers, name, s.cfg.CheckpointWait, strings.Join(reported, ", ")))
	s.cfg.Log.WithFields(logrus.Fields{"checkpoint": name, "reported": len(reported), "trainers": g.trainers}).Warn(err.Error())
	g.finish(wire.CheckpointReply{}, err)
}

// takeCheckpoint stores the checkpoint name gathered in g: every dataset's
// Trained, once every change before it is durable. A checkpoint of that
// name already kept in the datasets' generations now (a retry, or one
// stored by the master before a failover) is answered as it is.
func (s *Service) takeCheckpoint(ctx context.Context, name string, g *gathering) (wire.CheckpointReply, error) {
	s.cps.takeMu.Lock()
	defer s.cps.takeMu.Unlock()
	byDataset := map[string][]wire.Held{}
	for _, held := range g.held {
		for _, h := range held {
			ds := wire.DatasetName(h.Dataset)
			byDataset[ds] = append(byDataset[ds], h)
		}
	}
	points := map[string]DatasetPoint{}
	for _, d := range s.each() {
		p, ok, err := d.trained(ctx, byDataset[d.name])
		if err != nil {
			return wire.CheckpointReply{}, err
		}
		if ok {
			points[d.name] = p
		}
	}
	s.cps.mu.Lock()
	if cp, ok := s.keptNamed(name, points); ok {
		reply := s.keptReply(cp.ID)
		s.cps.mu.Unlock()
		return reply, nil
	}
	s.cps.next = max(s.cps.next, 1)
	cp := DataCheckpoint{ID: s.cps.next, Name: name, Time: s.cfg.Clock.Now().UTC(), Pinned: g.pin, Trainers: g.trainers, Datasets: points}
	drop := s.dropped(cp)
	s.cps.mu.Unlock()

	cctx, cancel := context.WithTimeout(ctx, s.cfg.CommitTimeout)
	err := s.cfg.Checkpoints.SaveCheckpoint(cctx, cp, drop)
	cancel()
	if err != nil {
		if errors.Is(err, ErrLeadershipLost) {
			s.lost(err)
		}
		return wire.CheckpointReply{}, wire.WithKind(wire.ErrNotServing, errors.WithMessagef(err, "master: store checkpoint %q", name))
	}
	s.cps.mu.Lock()
	defer s.cps.mu.Unlock()
	s.cps.kept = append(slices.DeleteFunc(s.cps.kept, func(k DataCheckpoint) bool { return slices.Contains(drop, k.ID) }), cp)
	s.cps.next = cp.ID + 1
	s.cfg.Log.WithFields(logrus.Fields{"checkpoint": cp.ID, "name": name, "trainers": cp.Trainers, "pinned": cp.Pinned, "dropped": drop}).
		Infof("checkpoint %d %q stored: %s", cp.ID, name, describePoints(points))
	return s.keptReply(cp.ID), nil
}

// keptNamed returns the kept checkpoint called name taken in the
// generations of points. Called with s.cps.mu held.
func (s *Service) keptNamed(name string, points map[string]DatasetPoint) (DataCheckpoint, bool) {
	for _, cp := range s.cps.kept {
		if cp.Name == name && maps.EqualFunc(cp.Datasets, points, func(a, b DatasetPoint) bool { return a.Gen == b.Gen }) {
			return cp, true
		}
	}
	return DataCheckpoint{}, false
}

// keptReply is the answer of a checkpoint stored as id. Called with
// s.cps.mu held.
func (s *Service) keptReply(id int64) wire.CheckpointReply {
	reply := wire.CheckpointReply{ID: id}
	for _, cp := range s.cps.kept {
		reply.Kept = append(reply.Kept, cp.ID)
	}
	return reply
}

// dropped returns the kept checkpoints storing cp drops: the oldest
// unpinned ones past CheckpointsKept. Called with s.cps.mu held.
func (s *Service) dropped(cp DataCheckpoint) []int64 {
	var unpinned []int64
	for _, k := range s.cps.kept {
		if !k.Pinned {
			unpinned = append(unpinned, k.ID)
		}
	}
	if !cp.Pinned {
		unpinned = append(unpinned, cp.ID)
	}
	if over := len(unpinned) - s.cfg.CheckpointsKept; over > 0 {
		return unpinned[:over]
	}
	return nil
}

// describePoints says what a checkpoint holds, for the log.
func describePoints(points map[string]DatasetPoint) string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(points)) {
		p := points[name]
		parts = append(parts, fmt.Sprintf("%s pass %d: %d records trained (%d tasks whole, %d in part)", name, p.Trained.Pass, p.Records, len(p.Trained.Whole), len(p.Trained.Part)))
	}
	if len(parts) == 0 {
		return "no dataset"
	}
	return strings.Join(parts, "; ")
}
