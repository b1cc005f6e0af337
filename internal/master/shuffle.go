package master

import (
	"github.com/sirupsen/logrus"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/dataset"
	"github.com/trainmaster/master/internal/taskqueue"
)

// A job's reproducible order. The seed is stored with the dataset when it
// is accepted (Config.ShuffleSeed), and the stored seed orders every pass
// (taskqueue's order.go) and every task's records (wire.Task.Seed), so
// that a master that takes over continues the order the job started with,
// whatever its own seed.

// queueConfig returns the queues' configuration for ds at round, ordered
// by its stored seed: the passes of every round up to it.
func (s *datasetService) queueConfig(ds *dataset.Dataset, round int) taskqueue.Config {
	cfg := s.cfg.Queue
	cfg.Seed = ds.ShuffleSeed
	cfg.Endless = endless(ds, s.cfg.Queue)
	cfg.Passes = 0
	if !cfg.Endless {
		cfg.Passes = s.passesPerRound(ds) * (round + 1)
	}
	return cfg
}

// endless reports whether the passes of ds have no end: it says so, or
// gives no passes of its own under a master whose -passes are without end
// (queue, the master's Config.Queue).
func endless(ds *dataset.Dataset, queue taskqueue.Config) bool {
	return ds.Endless || ds.Passes == 0 && queue.Endless
}

// passesPerRound is how many passes a round of ds runs, for a ds with an
// end (endless): its own, else the master's -passes.
func (s *datasetService) passesPerRound(ds *dataset.Dataset) int {
	switch {
	case ds.Passes > 0:
		return ds.Passes
	case s.cfg.Queue.Passes > 0:
		return s.cfg.Queue.Passes
	}
	return taskqueue.DefaultPasses
}

// warnSeed says so when a stored dataset's seed is not this master's: the
// operator asked for an order the job will not have.
func (s *datasetService) warnSeed(ds *dataset.Dataset) {
	if ds.ShuffleSeed == s.cfg.ShuffleSeed {
		return
	}
	s.cfg.Log.WithFields(logrus.Fields{"stored_seed": ds.ShuffleSeed, "shuffle_seed": s.cfg.ShuffleSeed}).Warnf(
		"the dataset was stored with shuffle seed %d and this master has -shuffle-seed %d: the stored seed rules, so that the job keeps its order",
		ds.ShuffleSeed, s.cfg.ShuffleSeed)
}

// taskSeed returns the seed of a task's records in the current pass, for
// the task handed out: 0 (file order) without a shuffle seed. Called with
// s.mu held.
func (s *datasetService) taskSeed(task int) uint64 {
	if s.ds.ShuffleSeed == 0 {
		return 0
	}
	return wire.TaskSeed(s.ds.ShuffleSeed, s.q.Pass(), task)
}
