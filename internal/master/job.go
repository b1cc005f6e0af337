package master

import (
	"context"
	"maps"
	"slices"
	"sync"

	"github.com/pkg/errors"

	"github.com/trainmaster/master/go/wire"
)

// Service is the master's state and the operations of the wire contract: it
// routes each call to the dataset it names (wire.Task.Dataset; none:
// wire.DefaultDataset), each dataset having its own queues, store, commits
// and timers, so that the writes of a call depend on neither the number of
// datasets nor their sizes.
type Service struct {
	cfg      Config
	declared map[string]wire.Dataset
	reserved map[string]bool // train and the declared datasets: the job keeps room for them
	stopped  chan struct{}   // closed by Close
	limits   lineLimits      // the lines clients cause, for every dataset (events.go)
	cps      checkpoints     // the data checkpoints (checkpoint.go)
	rdzv     rendezvousRuns  // the rendezvous runs (rendezvous.go)

	createMu sync.Mutex // guards the creation of datasets: one at a time, outside mu
	mu       sync.Mutex // guards sets, conns, closed and lostErr
	sets     map[string]*datasetService
	conns    map[string]int // trainer -> open connections, replayed to a new dataset
	closed   bool
	lostErr  error // the Store's error that stopped the service, if one did
}

// New returns a Service; Restore loads any state the store already holds.
// It refuses what Config.Validate refuses.
func New(cfg Config) (*Service, error) {
	cfg = cfg.withDefaults()
	declared, err := cfg.checked()
	if err != nil {
		return nil, err
	}
	reserved := map[string]bool{wire.DefaultDataset: true}
	for name := range declared {
		reserved[name] = true
	}
	return &Service{cfg: cfg, declared: declared, reserved: reserved, stopped: make(chan struct{}),
		limits: newLineLimits(cfg.Clock.Now), sets: map[string]*datasetService{}, conns: map[string]int{}}, nil
}

// Run ties the service to a term of leadership: it returns once ctx ends,
// with context.Cause(ctx), or once a Store reported the leadership lost,
// with that error (errors.Is ErrLeadershipLost); the service is closed
// either way. A service that is not Run still stops when a Store reports
// the leadership lost.
func (s *Service) Run(ctx context.Context) error {
	select {
	case <-ctx.Done():
		s.Close()
		return context.Cause(ctx)
	case <-s.stopped:
		return s.stopErr()
	}
}

// stopErr is what Run returns for a service closed by itself.
func (s *Service) stopErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lostErr
}

// lost stops every dataset once one store reported the leadership lost.
func (s *Service) lost(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.lostErr = err
	s.closeLocked()
}

// Restore loads every dataset the catalog holds, and accepts every
// declared dataset it holds none of (see datasetService.Restore).
func (s *Service) Restore(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, s.cfg.CommitTimeout)
	names, err := s.cfg.Catalog.Names(cctx)
	cancel()
	if err != nil {
		return errors.WithMessage(err, "master: list the stored datasets")
	}
	for name := range s.declared {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range slices.Compact(names) {
		if _, err := s.dataset(ctx, name, true); err != nil {
			return err
		}
	}
	if err := s.loadCheckpoints(ctx); err != nil {
		return err
	}
	return s.loadRuns(ctx)
}

// dataset returns the service of the dataset called name, creating and
// restoring it when create is set or the dataset is reserved; a dataset
// not yet known is refused otherwise (wire.ErrNoDataset).
func (s *Service) dataset(ctx context.Context, name string, create bool) (*datasetService, error) {
	name = wire.DatasetName(name)
	if d, err := s.known(name); d != nil || err != nil {
		return d, err
	}
	if !create && !s.reserved[name] {
		return nil, noDataset(name)
	}
	if err := wire.CheckDatasetName(name); err != nil {
		return nil, errors.Wrap(err, "master")
	}
	s.createMu.Lock()
	defer s.createMu.Unlock()
	if d, err := s.known(name); d != nil || err != nil {
		return d, err
	}
	if n := s.count(); n >= s.cfg.MaxDatasets && !s.reserved[name] {
		return nil, errors.Errorf("master: the job holds %d datasets, the most it may (-max-datasets); dataset %q is refused", n, name)
	}
	cctx, cancel := context.WithTimeout(ctx, s.cfg.CommitTimeout)
	st, err := s.cfg.Catalog.Store(cctx, name)
	cancel()
	if err != nil {
		return nil, wire.WithKind(wire.ErrNotServing, errors.WithMessagef(err, "master: open the store of dataset %q", name))
	}
	var declared *wire.Dataset
	if decl, ok := s.declared[name]; ok {
		declared = &decl
	}
	d := newDatasetService(s.cfg, name, declared, st, s.lost, s.limits)
	if err := d.Restore(ctx); err != nil {
		d.Close()
		return nil, err
	}
	return d, s.add(name, d)
}

// noDataset is the error of a call about a dataset the job does not hold.
func noDataset(name string) error {
	return wire.WithKind(wire.ErrNoDataset, errors.Errorf("the job holds no dataset %q", name))
}

// known returns the service of a dataset already created, or nil.
func (s *Service) known(name string) (*datasetService, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, wire.ErrNotServing
	}
	return s.sets[name], nil
}

// count is the number of datasets the job holds or keeps room for: the
// reserved ones count from the start.
func (s *Service) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.sets)
	for name := range s.reserved {
		if s.sets[name] == nil {
			n++
		}
	}
	return n
}

// forget drops a dataset whose first report was refused, so that it does
// not count against MaxDatasets; train and the declared ones stay.
func (s *Service) forget(name string, d *datasetService) {
	if s.reserved[name] {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sets[name] == d && !d.accepted() {
		delete(s.sets, name)
		d.Close()
	}
}

// add makes a restored dataset known, telling it the trainers' open
// connections.
func (s *Service) add(name string, d *datasetService) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		d.Close()
		return wire.ErrNotServing
	}
	for trainer, n := range s.conns {
		for range n {
			d.Connected(trainer)
		}
	}
	s.sets[name] = d
	return nil
}

// each returns the datasets' services, in name order.
func (s *Service) each() []*datasetService {
	s.mu.Lock()
	defer s.mu.Unlock()
	var sets []*datasetService
	for _, name := range slices.Sorted(maps.Keys(s.sets)) {
		sets = append(sets, s.sets[name])
	}
	return sets
}

// Close stops every dataset; the service answers every call with
// wire.ErrNotServing afterwards.
func (s *Service) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closeLocked()
}

// closeLocked is Close with s.mu held.
func (s *Service) closeLocked() {
	if !s.closed {
		close(s.stopped)
	}
	s.closed = true
	for _, d := range s.sets {
		d.Close()
	}
}

// Connected tells the service that a connection carries trainer's name.
func (s *Service) Connected(trainer string) {
	if !named(trainer) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.conns[trainer]++
	for _, d := range s.sets {
		d.Connected(trainer)
	}
}

// ConnectedTrainers returns, for each named trainer with a connection
// open to this master, how many it has open: a copy, for the monitor.
func (s *Service) ConnectedTrainers() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.conns)
}

// Disconnected tells the service that a connection that carried trainer's
// name ended.
func (s *Service) Disconnected(trainer string) {
	if !named(trainer) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conns[trainer]--; s.conns[trainer] <= 0 {
		delete(s.conns, trainer)
	}
	for _, d := range s.sets {
		d.Disconnected(trainer)
	}
}
