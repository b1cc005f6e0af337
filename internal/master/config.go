package master

import (
	"slices"
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
	// one Store call. Unset, a Store that is a GroupLimiter sets the
	// limits (etcd's transaction), and any other caps groups at
	// DefaultGroupRecords.
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
	// Checkpoints keeps the job's data checkpoints (checkpoint.go);
	// default: in memory.
	Checkpoints CheckpointStore
	// Rendezvous keeps the job's rendezvous runs (rendezvous.go);
	// default: in memory.
	Rendezvous RendezvousStore
	// CheckpointsKept is how many checkpoints are kept beyond the pinned
	// ones (-checkpoints-kept); default DefaultCheckpointsKept.
	CheckpointsKept int
	// CheckpointWait is how long a checkpoint waits for all its trainers
	// to report (-checkpoint-wait); default DefaultCheckpointWait.
	CheckpointWait time.Duration
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
	// DefaultCheckpointsKept and DefaultCheckpointWait are
	// Config.CheckpointsKept's and CheckpointWait's.
	DefaultCheckpointsKept = 5
	DefaultCheckpointWait  = time.Minute
)

// Validate reports what New would refuse in c: chunks per task, the
// queue configuration and the declared datasets.
func (c Config) Validate() error {
	_, err := c.withDefaults().checked()
	return err
}

// withDefaults returns c with its zero fields set to their defaults.
func (c Config) withDefaults() Config {
	if c.ChunksPerTask == 0 {
		c.ChunksPerTask = DefaultChunksPerTask
	}
	if c.Store == nil {
		c.Store = NewMemoryStore()
	}
	if c.Catalog == nil {
		c.Catalog = storeCatalog{train: c.Store, others: NewMemoryCatalog(nil)}
	}
	if c.Clock == nil {
		c.Clock = RealClock{}
	}
	if c.Log == nil {
		c.Log = logrus.StandardLogger()
	}
	if c.CommitTimeout == 0 {
		c.CommitTimeout = 10 * time.Second
	}
	if c.MaxDatasets <= 0 {
		c.MaxDatasets = DefaultMaxDatasets
	}
	if c.Observer == nil {
		c.Observer = noObserver{}
	}
	if c.TrainerGrace == 0 {
		c.TrainerGrace = DefaultTrainerGrace
	}
	if c.Checkpoints == nil {
		c.Checkpoints = &MemoryCheckpoints{}
	}
	if c.Rendezvous == nil {
		c.Rendezvous = &MemoryRuns{}
	}
	if c.CheckpointsKept <= 0 {
		c.CheckpointsKept = DefaultCheckpointsKept
	}
	if c.CheckpointWait <= 0 {
		c.CheckpointWait = DefaultCheckpointWait
	}
	return c
}

// checked checks a configuration with its defaults set, and returns its
// declared datasets by name. Its errors name no program: the command that
// reads the configuration says where it comes from.
func (c Config) checked() (map[string]wire.Dataset, error) {
	if c.ChunksPerTask < 0 {
		return nil, errors.Errorf("chunks per task must be positive, not %d", c.ChunksPerTask)
	}
	if c.CheckpointsKept > MaxCheckpointsKept {
		return nil, errors.Errorf("%d checkpoints kept: at most %d", c.CheckpointsKept, MaxCheckpointsKept)
	}
	if _, err := taskqueue.New(c.Queue, 1, func(int) int64 { return 1 }); err != nil {
		return nil, err
	}
	return declarations(c)
}

// DeclarationError is the error of Validate and New that refuses a declared
// dataset. Index is the place of the declaration refused in
// Config.Datasets, len(Config.Datasets) for Config.Dataset; of one
// declaration too many, the first beyond Config.MaxDatasets. First is, of a
// name declared twice, the place of its first declaration, else -1. Its
// text is Err's.
type DeclarationError struct {
	Index, First int
	Err          error
}

func (e *DeclarationError) Error() string { return e.Err.Error() }

// Unwrap returns Err.
func (e *DeclarationError) Unwrap() error { return e.Err }

// declarations checks the datasets cfg declares and returns them by name.
func declarations(cfg Config) (map[string]wire.Dataset, error) {
	all := slices.Clone(cfg.Datasets)
	if cfg.Dataset != nil {
		all = append(all, wire.Dataset{Name: wire.DefaultDataset, Patterns: cfg.Dataset})
	}
	if len(all) > cfg.MaxDatasets {
		return nil, &DeclarationError{Index: cfg.MaxDatasets, First: -1,
			Err: errors.Errorf("%d datasets declared, more than the %d allowed (-max-datasets)", len(all), cfg.MaxDatasets)}
	}
	declared := map[string]wire.Dataset{}
	first := map[string]int{} // name -> place of its declaration
	for i, d := range all {
		d.Name = wire.DatasetName(d.Name)
		if f, ok := first[d.Name]; ok {
			return nil, &DeclarationError{Index: i, First: f, Err: errors.Errorf("dataset %q declared twice", d.Name)}
		}
		err := wire.CheckDatasetName(d.Name)
		if err != nil {
			err = errors.Wrap(err, "declared dataset")
		} else {
			err = checkDeclaration(d)
		}
		if err != nil {
			return nil, &DeclarationError{Index: i, First: -1, Err: err}
		}
		declared[d.Name], first[d.Name] = d, i
	}
	return declared, nil
}

// checkDeclaration checks what a declaration says of itself, before any
// file is opened.
func checkDeclaration(d wire.Dataset) error {
	switch {
	case d.IsRange() && len(d.Patterns) > 0:
		return errors.Errorf("dataset %q gives both files and a number of records; an index-range dataset has no files", d.Name)
	case d.IsRange() && d.ChunksPerTask != 0:
		return errors.Errorf("index-range dataset %q gives chunks per task; it has no chunks", d.Name)
	case !d.IsRange() && len(d.Patterns) == 0:
		return errors.Errorf("dataset %q gives neither files nor a number of records", d.Name)
	case d.ChunksPerTask < 0 || d.Passes < 0:
		return errors.Errorf("dataset %q: %d chunks per task, %d passes (want 0, the master's, or more)", d.Name, d.ChunksPerTask, d.Passes)
	case d.Endless && d.Passes != 0:
		return errors.Errorf("dataset %q: %d passes a round, and passes without end: give one or the other", d.Name, d.Passes)
	case d.IsRange():
		if _, err := dataset.NewRange(d.Records, d.RecordsPerTask); err != nil {
			return errors.WithMessagef(err, "dataset %q", d.Name)
		}
	}
	return nil
}
