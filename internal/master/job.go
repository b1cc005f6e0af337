package master

import (
	"context"
	"fmt"
	"maps"
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
	// Store keeps the dataset train (wire.DefaultDataset) when Catalog is
	// nil, the other datasets being then kept in memory; default: a new
	// MemoryStore.
	Store Store
	// Catalog keeps every dataset of the job, each in a Store of its own;
	// default: Store's catalog, above.
	Catalog Catalog
	Clock   Clock // default: RealClock
	Log     logrus.FieldLogger
	// CommitTimeout bounds one Store call; default 10s.
	CommitTimeout time.Duration
	// GroupRecords caps the task entries of changes committed together in
	// one Store call; default 100, so that a group fits one etcd
	// transaction (128 operations by default) with the pass key.
	GroupRecords int
	// DatasetConfig says where a reported dataset may be (its Root: the
	// -dataset-root flag) and bounds what a report may name.
	DatasetConfig dataset.Config
	// Dataset, when set, is the dataset train this master serves (the
	// -dataset flag): the same as a declaration of train in Datasets.
	Dataset []string
	// Datasets are the datasets this master declares (the -datasets
	// file): Restore accepts each one the store holds none of, and
	// trainers' reports of them are only compared with them. A dataset
	// declared nowhere is decided by the first report of it.
	Datasets []wire.Dataset
	// MaxDatasets bounds the datasets of the job: trainers declare no more
	// than this (declared and stored ones count); default
	// DefaultMaxDatasets.
	MaxDatasets int
	// Lost is called, once and from its own goroutine, when the Store
	// reports ErrLeadershipLost: the service has already stopped answering.
	Lost func(error)
	// Observer is told what the service does (metrics, status page);
	// default: nothing is told.
	Observer Observer
	// TrainerGrace is how long a named trainer holding tasks may stay
	// without a connection before its tasks go back to Todo (presence.go);
	// default DefaultTrainerGrace, negative: never.
	TrainerGrace time.Duration
	// ShuffleSeed is stored with a dataset this master accepts, and orders
	// its tasks and their records (shuffle.go; the -shuffle-seed flag): 0
	// means file order. A stored dataset keeps the seed it was accepted
	// with, whatever this field; Queue.Seed is ignored: the queues take
	// the dataset's seed.
	ShuffleSeed uint64
}

// ErrLeadershipLost is what a Store wraps when it rejects a write because this
// master no longer holds the lock. The service stops at once, keeps nothing
// of its state and answers every call with wire.TextNotServing.
var ErrLeadershipLost = errors.New("master: leadership lost")

// ErrDeclaredDataset is wrapped by Restore when a dataset declared in
// Config.Dataset or Config.Datasets cannot be served: it cannot be built or
// stored, or the store holds another. No new term changes that.
var ErrDeclaredDataset = errors.New("master: declared dataset refused")

// errNotAccepted wraps the reasons a dataset is refused for good (its files,
// its size), as opposed to a store failure that a retry may overcome.
var errNotAccepted = errors.New("master: dataset not accepted")

// Defaults of Config.
const (
	DefaultChunksPerTask = 10
	DefaultGroupRecords  = 100
	DefaultMaxDatasets   = 16
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

	createMu sync.Mutex // one dataset created at a time, outside mu
	mu       sync.Mutex
	sets     map[string]*datasetService
	conns    map[string]int // trainer -> open connections, replayed to a new dataset
	closed   bool
	lostOnce sync.Once
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
	if cfg.Catalog == nil {
		cfg.Catalog = storeCatalog{train: cfg.Store, others: NewMemoryCatalog(nil)}
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
	if cfg.MaxDatasets <= 0 {
		cfg.MaxDatasets = DefaultMaxDatasets
	}
	if cfg.Observer == nil {
		cfg.Observer = noObserver{}
	}
	if cfg.TrainerGrace == 0 {
		cfg.TrainerGrace = DefaultTrainerGrace
	}
	if _, err := taskqueue.New(cfg.Queue, 1, func(int) int64 { return 1 }); err != nil {
		return nil, err // the queue configuration is checked up front
	}
	declared, err := declarations(cfg)
	if err != nil {
		return nil, err
	}
	reserved := map[string]bool{wire.DefaultDataset: true}
	for name := range declared {
		reserved[name] = true
	}
	s := &Service{cfg: cfg, declared: declared, reserved: reserved, sets: map[string]*datasetService{}, conns: map[string]int{}}
	s.cfg.Lost = func(err error) { s.lost(err, cfg.Lost) }
	return s, nil
}

// declarations checks the datasets cfg declares and returns them by name.
func declarations(cfg Config) (map[string]wire.Dataset, error) {
	all := slices.Clone(cfg.Datasets)
	if cfg.Dataset != nil {
		all = append(all, wire.Dataset{Name: wire.DefaultDataset, Patterns: cfg.Dataset})
	}
	if len(all) > cfg.MaxDatasets {
		return nil, errors.Errorf("master: %d datasets declared, more than the %d allowed (-max-datasets)", len(all), cfg.MaxDatasets)
	}
	declared := map[string]wire.Dataset{}
	for _, d := range all {
		d.Name = wire.DatasetName(d.Name)
		if err := wire.CheckDatasetName(d.Name); err != nil {
			return nil, errors.Wrap(err, "master: declared dataset")
		}
		if _, ok := declared[d.Name]; ok {
			return nil, errors.Errorf("master: dataset %q declared twice", d.Name)
		}
		if err := checkDeclaration(d); err != nil {
			return nil, err
		}
		declared[d.Name] = d
	}
	return declared, nil
}

// checkDeclaration checks what a declaration says of itself, before any
// file is opened.
func checkDeclaration(d wire.Dataset) error {
	switch {
	case d.IsRange() && len(d.Patterns) > 0:
		return errors.Errorf("master: dataset %q gives both files and a number of records; an index-range dataset has no files", d.Name)
	case d.IsRange() && d.ChunksPerTask != 0:
		return errors.Errorf("master: index-range dataset %q gives chunks per task; it has no chunks", d.Name)
	case !d.IsRange() && len(d.Patterns) == 0:
		return errors.Errorf("master: dataset %q gives neither files nor a number of records", d.Name)
	case d.ChunksPerTask < 0 || d.Passes < 0:
		return errors.Errorf("master: dataset %q: %d chunks per task, %d passes (want 0, the master's, or more)", d.Name, d.ChunksPerTask, d.Passes)
	case d.IsRange():
		if _, err := dataset.NewRange(d.Records, d.RecordsPerTask); err != nil {
			return errors.WithMessagef(err, "master: dataset %q", d.Name)
		}
	}
	return nil
}

// lost stops every dataset once one store reported the leadership lost,
// and tells the caller's Lost once.
func (s *Service) lost(err error, tell func(error)) {
	s.lostOnce.Do(func() {
		s.Close()
		if tell != nil {
			tell(err)
		}
	})
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
	return nil
}

// dataset returns the service of the dataset called name, creating and
// restoring it when create is set or the dataset is reserved (else a dataset not yet known is refused with wire.ErrNoDataset).
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
		return nil, fmt.Errorf("%w: %w", wire.ErrNotServing, errors.WithMessagef(err, "master: open the store of dataset %q", name))
	}
	var declared *wire.Dataset
	if decl, ok := s.declared[name]; ok {
		declared = &decl
	}
	d := newDatasetService(s.cfg, name, declared, st)
	if err := d.Restore(ctx); err != nil {
		d.Close()
		return nil, err
	}
	return d, s.add(name, d)
}

// noDataset is the error of a call about a dataset the job does not hold.
func noDataset(name string) error {
	return fmt.Errorf("%w: the job holds no dataset %q", wire.ErrNoDataset, name)
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

// ReportDataset reports the files of the dataset train: the first report
// decides it, unless the master declared it; later ones must name the same
// patterns.
func (s *Service) ReportDataset(ctx context.Context, patterns []string) error {
	return s.DeclareDataset(ctx, wire.Dataset{Name: wire.DefaultDataset, Patterns: patterns})
}

// DeclareDataset reports a named dataset: the first report of a name
// decides it, unless the master declared it; a later one must describe the
// same dataset, and is refused with both descriptions otherwise.
func (s *Service) DeclareDataset(ctx context.Context, d wire.Dataset) error {
	d.Name = wire.DatasetName(d.Name)
	if err := wire.CheckDatasetName(d.Name); err != nil {
		return fmt.Errorf("%w: %w", errNotAccepted, errors.Wrap(err, "master"))
	}
	if err := checkDeclaration(d); err != nil {
		return fmt.Errorf("%w: %w", errNotAccepted, err)
	}
	ds, err := s.dataset(ctx, d.Name, true)
	if err != nil {
		return err
	}
	if err := ds.Report(ctx, d); err != nil {
		s.forget(d.Name, ds)
		return err
	}
	return nil
}

// GetTask records the finish it carries, if any, then hands out a task of
// the dataset finished names; both changes are committed together before
// it replies.
func (s *Service) GetTask(ctx context.Context, finished wire.Task) (wire.Task, error) {
	d, err := s.taskDataset(ctx, &finished)
	if err != nil {
		return wire.Task{}, err
	}
	return d.GetTask(ctx, finished)
}

// taskDataset returns the service of the dataset t names; a call that
// reaches none is still told to the Observer.
func (s *Service) taskDataset(ctx context.Context, t *wire.Task) (*datasetService, error) {
	d, err := s.dataset(ctx, t.Dataset, false)
	if err != nil {
		t.Trainer = wire.TrainerName(t.Trainer)
		s.cfg.Observer.Called(t.Trainer, s.cfg.Clock.Now())
	}
	return d, err
}

// reportTo routes a report of t to its dataset's report.
func (s *Service) reportTo(ctx context.Context, t wire.Task, report func(*datasetService, context.Context, wire.Task) (wire.Report, error)) (wire.Report, error) {
	d, err := s.taskDataset(ctx, &t)
	if err != nil {
		return 0, err
	}
	return report(d, ctx, t)
}

// TaskFinished records a finish report.
func (s *Service) TaskFinished(ctx context.Context, t wire.Task) (wire.Report, error) {
	return s.reportTo(ctx, t, (*datasetService).TaskFinished)
}

// TaskFailed records a failure report; the reason is kept and logged cut
// to wire.MaxErrorBytes.
func (s *Service) TaskFailed(ctx context.Context, t wire.Task) (wire.Report, error) {
	return s.reportTo(ctx, t, (*datasetService).TaskFailed)
}

// TaskProgress records how far the current dispatch of a task got
// (wire.Progress), and answers where it is to stop.
func (s *Service) TaskProgress(ctx context.Context, p wire.Progress) (wire.ProgressReply, error) {
	d, err := s.dataset(ctx, p.Dataset, false)
	if err != nil {
		return wire.ProgressReply{}, err
	}
	return d.TaskProgress(ctx, p)
}

// StartRound starts round r.Round of a dataset (wire.Round) and returns
// the round now current.
func (s *Service) StartRound(ctx context.Context, r wire.Round) (int, error) {
	d, err := s.dataset(ctx, r.Dataset, false)
	if err != nil {
		return 0, err
	}
	return d.StartRound(ctx, r.Round)
}

// Status describes the dataset train (wire.Status) once what it shows is
// durable, and names every dataset of the job.
func (s *Service) Status(ctx context.Context) (wire.Status, error) {
	return s.DatasetStatus(ctx, wire.DefaultDataset)
}

// DatasetStatus describes a dataset (wire.Status) once what it shows is
// durable, and names every dataset of the job. A dataset not reported yet
// shows DatasetReported false.
func (s *Service) DatasetStatus(ctx context.Context, name string) (wire.Status, error) {
	name = wire.DatasetName(name)
	d, err := s.dataset(ctx, name, false)
	var st wire.Status
	switch {
	case errors.Is(err, wire.ErrNoDataset):
		st.Dataset = name
	case err != nil:
		return wire.Status{}, err
	default:
		if st, err = d.Status(ctx); err != nil {
			return wire.Status{}, err
		}
	}
	st.Datasets = s.names()
	return st, nil
}

// names returns the names of the datasets of the job, sorted.
func (s *Service) names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.sets))
}

// Job returns the state of the dataset train, or false when the service
// has no such dataset or is not serving.
func (s *Service) Job() (JobState, bool) {
	d, err := s.known(wire.DefaultDataset)
	if d == nil || err != nil {
		return JobState{}, false
	}
	return d.Job()
}

// Jobs returns the state of every dataset of the job, in name order.
func (s *Service) Jobs() []JobState {
	var jobs []JobState
	for _, d := range s.each() {
		if j, ok := d.Job(); ok {
			jobs = append(jobs, j)
		}
	}
	return jobs
}

// storeCatalog is the Catalog of a Service configured with a Store only.
type storeCatalog struct {
	train  Store
	others *MemoryCatalog
}

func (c storeCatalog) Store(ctx context.Context, name string) (Store, error) {
	if name == wire.DefaultDataset {
		return c.train, nil
	}
	return c.others.Store(ctx, name)
}

func (c storeCatalog) Names(ctx context.Context) ([]string, error) {
	names, err := c.others.Names(ctx)
	if err != nil {
		return nil, err
	}
	return append(names, wire.DefaultDataset), nil
}
