package master

import (
	"context"
	"iter"
	"slices"
	"sync"

	"github.com/pkg/errors"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/dataset"
	"github.com/trainmaster/master/internal/taskqueue"
)

// Snapshot is the state a Store holds: nil Dataset means none was accepted.
type Snapshot struct {
	Dataset *dataset.Dataset
	Pass    int
	Round   int                  // the dataset's round (Service.StartRound)
	Gen     taskqueue.Generation // the pass state's generation (a rewind's)
	// Entries yields the stored task entries, in any order, reading them as
	// they are taken (taskqueue.Restore), so that a store need never hold
	// them all at once; a read that fails ends it with the error. It may be
	// ranged over once, and only within the Load call's context.
	Entries iter.Seq2[taskqueue.Record, error]
}

// ErrDatasetTooLarge is wrapped by a Store's SaveDataset when the dataset
// cannot be stored whatever is retried (its description is over the store's
// limits); nothing was written. The service answers it to the reporter as
// a final error, not as "master is not serving".
var ErrDatasetTooLarge = errors.New("master: dataset too large to store")

// Store keeps the queue state durable. The service calls its methods one
// at a time: Commit in the order the changes were made, SaveDataset and
// Load only while no commit is in flight.
type Store interface {
	// SaveDataset records an accepted dataset, at pass 0 with no entries.
	SaveDataset(ctx context.Context, ds *dataset.Dataset) error
	// Commit records a change of the queues: one operation's, or several
	// merged (taskqueue.Change.Merge) within the group's limits
	// (GroupLimiter, Config.GroupRecords), unless one operation alone
	// changed more; and the round the dataset is at once it is made, kept
	// with the pass.
	Commit(ctx context.Context, round int, ch taskqueue.Change) error
	// Load returns what was saved and committed.
	Load(ctx context.Context) (*Snapshot, error)
}

// A GroupLimiter is a Store that writes a change in one atomic write as
// long as it fits limits of its own (etcd's transaction: its operations
// and bytes). Unless Config.GroupRecords is set, the service groups the
// changes waiting for a commit up to those limits: a group grows with the
// backlog, and every operation's change stays whole in one write.
type GroupLimiter interface {
	// GroupLimits returns the most entries, and bytes of them
	// (RecordBytes), one atomic write of the store holds with the pass.
	GroupLimits() (records, bytes int)
	// RecordBytes is what r counts against the bytes.
	RecordBytes(r taskqueue.Record) int
}

// MemoryStore is a Store in memory, for a master without persistence and
// for tests.
type MemoryStore struct {
	mu      sync.Mutex // guards the fields below
	ds      *dataset.Dataset
	pass    int
	round   int
	gen     taskqueue.Generation
	records map[int]taskqueue.Record
	commits int
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore { return &MemoryStore{} }

// SaveDataset implements Store.
func (m *MemoryStore) SaveDataset(_ context.Context, ds *dataset.Dataset) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ds, m.pass, m.round, m.gen, m.records = ds, 0, 0, taskqueue.Generation{}, map[int]taskqueue.Record{}
	return nil
}

// Commit implements Store.
func (m *MemoryStore) Commit(_ context.Context, round int, ch taskqueue.Change) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pass, m.round = ch.Pass, round
	if ch.PassChanged {
		m.gen = ch.Gen
	}
	for _, r := range ch.Records {
		m.records[r.Index] = r
	}
	m.commits++
	return nil
}

// Load implements Store.
func (m *MemoryStore) Load(context.Context) (*Snapshot, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	records := make([]taskqueue.Record, 0, len(m.records))
	for _, r := range m.records {
		records = append(records, r)
	}
	return &Snapshot{Dataset: m.ds, Pass: m.pass, Round: m.round, Gen: m.gen, Entries: taskqueue.Stored(records)}, nil
}

// holdsDataset reports whether a dataset was saved.
func (m *MemoryStore) holdsDataset() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ds != nil
}

// Commits returns how many changes were committed.
func (m *MemoryStore) Commits() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.commits
}

// Catalog keeps the stores of a job's datasets, one per name.
type Catalog interface {
	// Store returns the store of the dataset called name (which may hold
	// nothing yet).
	Store(ctx context.Context, name string) (Store, error)
	// Names returns the names of the datasets stored, sorted; a name may
	// hold nothing (a save that failed half way).
	Names(ctx context.Context) ([]string, error)
}

// MemoryCatalog is a Catalog of MemoryStores.
type MemoryCatalog struct {
	mu     sync.Mutex // guards stores
	stores map[string]*MemoryStore
}

// NewMemoryCatalog returns a MemoryCatalog whose dataset train (wire's
// DefaultDataset) is kept in train, nil for a new MemoryStore.
func NewMemoryCatalog(train *MemoryStore) *MemoryCatalog {
	if train == nil {
		train = NewMemoryStore()
	}
	return &MemoryCatalog{stores: map[string]*MemoryStore{wire.DefaultDataset: train}}
}

// Store implements Catalog.
func (c *MemoryCatalog) Store(_ context.Context, name string) (Store, error) {
	return c.Memory(name), nil
}

// Memory returns the MemoryStore of the dataset called name.
func (c *MemoryCatalog) Memory(name string) *MemoryStore {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, ok := c.stores[name]
	if !ok {
		st = NewMemoryStore()
		c.stores[name] = st
	}
	return st
}

// Names implements Catalog.
func (c *MemoryCatalog) Names(context.Context) ([]string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var names []string
	for name, st := range c.stores {
		if st.holdsDataset() {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names, nil
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
