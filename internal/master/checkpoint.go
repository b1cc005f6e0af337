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
// checkpoint report to it by name; with the last report it is complete,
// and queued for the storer: one goroutine, running while checkpoints are
// queued, that takes every one queued at once (up to maxBatch), reads each
// dataset's Trained for all of them in one operation (the state in
// memory: see datasetService.trained), and stores them in one fenced write that drops
// the oldest unpinned past CheckpointsKept; then it answers their callers.
// So a burst of checkpoints (every trainer's own, say) costs the store a
// write per batch, not per checkpoint. A batch and a rewind are one at a
// time (checkpoints.takeMu): IDs follow each other, and a rewind never
// interleaves with a take.

// maxOpenCheckpoints bounds the checkpoints gathering reports at once:
// names a client invents cannot grow the master without end.
const maxOpenCheckpoints = 16

// maxBatch bounds the checkpoints stored together.
const maxBatch = 64

// MaxPinned bounds the pinned checkpoints kept: past it the oldest pinned
// one is dropped, so that a flood of pins cannot grow etcd without end.
// MaxCheckpointsKept bounds Config.CheckpointsKept. Together they stay far
// below what a new leader loads (etcdstore.MaxCheckpoints).
const (
	MaxPinned          = 100
	MaxCheckpointsKept = 100
)

// checkpoints is the service's part that keeps the data checkpoints.
type checkpoints struct {
	takeMu sync.Mutex // one batch or rewind at a time

	mu      sync.Mutex            // guards the fields below
	open    map[string]*gathering // checkpoints gathering reports, by name
	ready   []*gathering          // complete, for the storer
	storing bool                  // the storer runs
	kept    []DataCheckpoint      // the stored ones, by ID ascending (loaded by Restore)
	next    int64                 // the next ID
}

// gathering is a checkpoint waiting for its trainers' reports.
type gathering struct {
	name     string
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
	if reply, ok := s.storedNamed(c.Name); ok {
		return reply, nil // a retry of a call whose checkpoint was stored since
	}
	g, complete, err := s.report(c)
	if err != nil {
		return wire.CheckpointReply{}, err
	}
	if complete {
		s.enqueueCheckpoint(g)
	}
	select {
	case <-g.done:
		return g.reply, g.err
	case <-s.stopped:
		return wire.CheckpointReply{}, wire.ErrNotServing
	case <-ctx.Done():
		return wire.CheckpointReply{}, context.Cause(ctx) // its report stays in: a retry replaces it
	}
}

// storedNamed answers a report of a checkpoint already stored under its
// name in the datasets' generations now, and is false for any other: a
// trainer whose call was retried after the others' completed it would
// otherwise open a gathering of its own, which nobody else joins.
func (s *Service) storedNamed(name string) (wire.CheckpointReply, bool) {
	gens := map[string]DatasetPoint{}
	for _, d := range s.each() {
		if gen, ok := d.generation(); ok {
			gens[d.name] = DatasetPoint{Gen: gen}
		}
	}
	s.cps.mu.Lock()
	defer s.cps.mu.Unlock()
	if cp, ok := s.keptNamed(name, gens); ok {
		return s.keptReply(cp.ID), true
	}
	return wire.CheckpointReply{}, false
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
		g = &gathering{name: c.Name, trainers: c.Trainers, held: map[string][]wire.Held{}, done: make(chan struct{})}
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
	select {
	case <-s.stopped:
		return // the service stopped: its callers were answered not serving
	default:
	}
	delete(s.cps.open, name)
	reported := slices.Sorted(maps.Keys(g.held))
	err := wire.WithKind(wire.ErrCheckpointIncomplete, errors.Errorf("%d of the %d trainers of checkpoint %q reported within %v (%s); nothing was stored",
		len(reported), g.trainers, name, s.cfg.CheckpointWait, strings.Join(reported, ", ")))
	s.cfg.Log.WithFields(logrus.Fields{"checkpoint": name, "reported": len(reported), "trainers": g.trainers}).Warn(err.Error())
	g.finish(wire.CheckpointReply{}, err)
}

// enqueueCheckpoint queues a complete checkpoint for the storer, starting
// it if it does not run.
func (s *Service) enqueueCheckpoint(g *gathering) {
	s.cps.mu.Lock()
	defer s.cps.mu.Unlock()
	s.cps.ready = append(s.cps.ready, g)
	if !s.cps.storing {
		s.cps.storing = true
		go s.storeCheckpoints()
	}
}

// storeCheckpoints is the storer: it stores the queued checkpoints batch
// after batch, and stops when none is left.
func (s *Service) storeCheckpoints() {
	for batch := s.takeReady(); len(batch) > 0; batch = s.takeReady() {
		s.storeBatch(batch)
	}
}

// takeReady returns the next batch of queued checkpoints; none stops the
// storer.
func (s *Service) takeReady() []*gathering {
	s.cps.mu.Lock()
	defer s.cps.mu.Unlock()
	n := min(len(s.cps.ready), maxBatch)
	batch := s.cps.ready[:n:n]
	s.cps.ready = s.cps.ready[n:]
	if n == 0 {
		s.cps.storing = false
	}
	return batch
}

// storeBatch stores a batch of checkpoints and answers their callers: a
// checkpoint of a name already kept in the datasets' generations now (a
// retry, or one stored by the master before a failover) is answered as it
// is, and so is one named twice in the batch.
func (s *Service) storeBatch(batch []*gathering) {
	s.cps.takeMu.Lock()
	defer s.cps.takeMu.Unlock()
	points, err := s.batchPoints(batch)
	if err != nil {
		for _, g := range batch {
			g.finish(wire.CheckpointReply{}, err)
		}
		return
	}
	s.cps.mu.Lock()
	ids := make([]int64, len(batch))
	var cps []DataCheckpoint
	next := max(s.cps.next, 1)
	for i, g := range batch {
		if cp, ok := s.keptNamed(g.name, points[i]); ok {
			ids[i] = cp.ID
			continue
		}
		if j := slices.IndexFunc(cps, func(cp DataCheckpoint) bool { return cp.Name == g.name }); j >= 0 {
			ids[i] = cps[j].ID
			continue
		}
		ids[i] = next
		cps = append(cps, DataCheckpoint{ID: next, Name: g.name, Time: s.cfg.Clock.Now().UTC(), Pinned: g.pin, Trainers: g.trainers, Datasets: points[i]})
		next++
	}
	drop := s.dropped(cps)
	cps = slices.DeleteFunc(cps, func(cp DataCheckpoint) bool { return slices.Contains(drop, cp.ID) })
	s.cps.mu.Unlock()

	if err := s.saveCheckpoints(cps, drop); err != nil {
		for _, g := range batch {
			g.finish(wire.CheckpointReply{}, err)
		}
		return
	}
	s.cps.mu.Lock()
	s.cps.kept = append(slices.DeleteFunc(s.cps.kept, func(k DataCheckpoint) bool { return slices.Contains(drop, k.ID) }), cps...)
	s.cps.next = next
	replies := make([]wire.CheckpointReply, len(batch))
	for i := range batch {
		replies[i] = s.keptReply(ids[i])
	}
	s.cps.mu.Unlock()
	for _, cp := range cps {
		s.cfg.Log.WithFields(logrus.Fields{"checkpoint": cp.ID, "name": cp.Name, "trainers": cp.Trainers, "pinned": cp.Pinned}).
			Infof("checkpoint %d %q stored: %s", cp.ID, cp.Name, describePoints(cp.Datasets))
		s.cfg.Observer.CheckpointStored(cp.summary())
	}
	if len(drop) > 0 {
		s.cfg.Log.WithField("dropped", drop).Infof("checkpoints dropped past the %d kept", s.cfg.CheckpointsKept)
	}
	for i, g := range batch {
		g.finish(replies[i], nil)
	}
}

// batchPoints reads, for each checkpoint of batch, every dataset's
// Trained: one operation per dataset for the whole batch.
func (s *Service) batchPoints(batch []*gathering) ([]map[string]DatasetPoint, error) {
	points := make([]map[string]DatasetPoint, len(batch))
	helds := make([][]wire.Held, len(batch))
	for i := range batch {
		points[i] = map[string]DatasetPoint{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.CommitTimeout)
	defer cancel()
	for _, d := range s.each() {
		for i, g := range batch {
			helds[i] = helds[i][:0]
			for _, held := range g.held {
				for _, h := range held {
					if wire.DatasetName(h.Dataset) == d.name {
						helds[i] = append(helds[i], h)
					}
				}
			}
		}
		ps, ok, err := d.trained(ctx, helds)
		if err != nil {
			return nil, err
		}
		for i := range batch {
			if ok {
				points[i][d.name] = ps[i]
			}
		}
	}
	return points, nil
}

// saveCheckpoints stores cps, dropping drop; a write the fence refuses
// stops the service.
func (s *Service) saveCheckpoints(cps []DataCheckpoint, drop []int64) error {
	if len(cps) == 0 && len(drop) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.CommitTimeout)
	defer cancel()
	err := s.cfg.Checkpoints.SaveCheckpoints(ctx, cps, drop)
	if err == nil {
		return nil
	}
	if errors.Is(err, ErrLeadershipLost) {
		s.lost(err)
	}
	return wire.WithKind(wire.ErrNotServing, errors.WithMessagef(err, "master: store %d checkpoints", len(cps)))
}

// keptNamed returns the kept checkpoint called name taken in the
// generations of points: each dataset it holds at the generation points
// gives (a dataset accepted since does not count). Called with s.cps.mu
// held.
func (s *Service) keptNamed(name string, points map[string]DatasetPoint) (DataCheckpoint, bool) {
	for _, cp := range s.cps.kept {
		if cp.Name != name {
			continue
		}
		same := true
		for ds, p := range cp.Datasets {
			if now, ok := points[ds]; !ok || now.Gen != p.Gen {
				same = false
			}
		}
		if same {
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

// dropped returns the checkpoints storing cps drops: the oldest unpinned
// ones past CheckpointsKept and the oldest pinned ones past MaxPinned,
// kept ones or (in a burst of more than are kept) some of cps, which then
// need not be written. Called with s.cps.mu held.
func (s *Service) dropped(cps []DataCheckpoint) []int64 {
	var unpinned, pinned []int64
	for _, cp := range append(slices.Clone(s.cps.kept), cps...) {
		if cp.Pinned {
			pinned = append(pinned, cp.ID)
		} else {
			unpinned = append(unpinned, cp.ID)
		}
	}
	var drop []int64
	if over := len(unpinned) - s.cfg.CheckpointsKept; over > 0 {
		drop = unpinned[:over]
	}
	if over := len(pinned) - MaxPinned; over > 0 {
		drop = append(drop, pinned[:over]...)
		s.cfg.Log.WithField("dropped", pinned[:over]).Warnf("more than %d checkpoints pinned: the oldest pinned are dropped", MaxPinned)
	}
	return drop
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
