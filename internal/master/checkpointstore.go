package master

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/trainmaster/master/internal/taskqueue"
)

// DataCheckpoint is a data checkpoint as stored (checkpoint.go): what of
// every dataset of the job was trained when the trainers saved their
// model.
type DataCheckpoint struct {
	ID       int64
	Name     string
	Time     time.Time
	Pinned   bool
	Trainers int
	Datasets map[string]DatasetPoint
}

// DatasetPoint is one dataset's part of a checkpoint: its round and
// generation then, and what of its pass was trained.
type DatasetPoint struct {
	Round   int
	Gen     int
	Tasks   int   // the dataset's, to check the checkpoint against it
	Records int64 // records held trained, for people
	Trained taskqueue.Trained
}

// CheckpointStore keeps a job's data checkpoints. The service calls it
// one call at a time.
type CheckpointStore interface {
	// SaveCheckpoints stores cps and deletes the checkpoints drop names,
	// fenced: each checkpoint whole or not at all, the drops once every
	// one of cps is stored.
	SaveCheckpoints(ctx context.Context, cps []DataCheckpoint, drop []int64) error
	// LoadCheckpoints returns the stored checkpoints, by ID ascending.
	LoadCheckpoints(ctx context.Context) ([]DataCheckpoint, error)
}

// MemoryCheckpoints is a CheckpointStore in memory.
type MemoryCheckpoints struct {
	mu  sync.Mutex // guards cps
	cps []DataCheckpoint
}

// SaveCheckpoints implements CheckpointStore.
func (m *MemoryCheckpoints) SaveCheckpoints(_ context.Context, cps []DataCheckpoint, drop []int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cps = slices.DeleteFunc(m.cps, func(c DataCheckpoint) bool {
		return slices.Contains(drop, c.ID) || slices.ContainsFunc(cps, func(n DataCheckpoint) bool { return n.ID == c.ID })
	})
	m.cps = append(m.cps, cps...)
	slices.SortFunc(m.cps, func(a, b DataCheckpoint) int { return int(a.ID - b.ID) })
	return nil
}

// LoadCheckpoints implements CheckpointStore.
func (m *MemoryCheckpoints) LoadCheckpoints(context.Context) ([]DataCheckpoint, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.cps), nil
}
