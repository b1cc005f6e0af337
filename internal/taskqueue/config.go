package taskqueue

import (
	"math"
	"time"

	"github.com/pkg/errors"
)

// Config sets passes and the timeout policy. Zero fields take the defaults.
//
// A task's timeout is computed when it is dispatched:
//
//	timeout = clamp(Factor × average seconds per record × records in the task,
//	                TimeoutMin, Timeout)
//
// where the average is over the last Window finished dispatches, each one's
// duration divided by its task's record count (so the small last task is not
// penalised). Until MinSamples dispatches have finished, the timeout is
// Timeout; when the MinSamples-th finishes, the dispatches still pending get
// the adaptive timeout counted from their own dispatch, if it is sooner. This
// change of deadlines is not part of any Change: a restored pending task gets
// the deadline stored with it.
type Config struct {
	Passes int // passes over the dataset; default 1 (0 with Endless)
	// Endless runs passes until the job is stopped: a pass ends and the
	// next starts, and the queues are never all done (Passes is 0). The
	// pass counter is an int32 in the store's entries, so that pass
	// math.MaxInt32 ends them, some 2 billion passes on.
	Endless     bool
	Timeout     time.Duration // upper bound and initial timeout; default 10m
	TimeoutMin  time.Duration // lower bound; default 10s
	Factor      float64       // multiple of the average; default 3
	MaxTimeouts int           // a task that times out or fails more often than this in a pass moves to Failed; default 3
	Window      int           // finished dispatches in the moving average; default 20
	MinSamples  int           // finished dispatches before the average is used; default 3
	// Reassign is how long a task that timed out waits for a trainer other
	// than the one it was taken from; after it, that one may have it
	// again. Default 3 s (a few of the clients' retry backoffs); negative:
	// no wait.
	Reassign time.Duration
	// Seed orders the tasks of every pass (order.go): 0 hands them out in
	// task order, the files' order; any other value in an order drawn
	// from (Seed, pass). The master sets it from the dataset's stored seed.
	Seed uint64
	// Stragglers says what Dispatch does for a trainer that finds Todo
	// empty while a dispatch runs far past its expected time
	// (stragglers.go): nothing (StragglersOff, the default), split the
	// rest of it or back it up.
	Stragglers Stragglers
}

// Defaults of Config.
const (
	DefaultPasses      = 1
	DefaultTimeout     = 10 * time.Minute
	DefaultTimeoutMin  = 10 * time.Second
	DefaultFactor      = 3
	DefaultMaxTimeouts = 3
	DefaultWindow      = 20
	DefaultMinSamples  = 3
	DefaultReassign    = 3 * time.Second
)

// withDefaults fills zero fields and checks the rest.
func (c Config) withDefaults() (Config, error) {
	if c.Passes == 0 && !c.Endless {
		c.Passes = DefaultPasses
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.TimeoutMin == 0 {
		c.TimeoutMin = min(DefaultTimeoutMin, c.Timeout)
	}
	if c.Factor == 0 {
		c.Factor = DefaultFactor
	}
	if c.MaxTimeouts == 0 {
		c.MaxTimeouts = DefaultMaxTimeouts
	}
	if c.Window == 0 {
		c.Window = DefaultWindow
	}
	if c.MinSamples == 0 {
		c.MinSamples = DefaultMinSamples
	}
	if c.Reassign == 0 {
		c.Reassign = DefaultReassign
	}
	switch {
	case c.Passes < 0 || c.Passes > math.MaxInt32:
		return c, errors.Errorf("taskqueue: passes must be between 1 and %d, not %d", math.MaxInt32, c.Passes)
	case c.Endless && c.Passes != 0:
		return c, errors.Errorf("taskqueue: %d passes given to queues without end", c.Passes)
	case c.Timeout < 0 || c.TimeoutMin < 0:
		return c, errors.Errorf("taskqueue: timeouts must be positive, not %v and %v", c.Timeout, c.TimeoutMin)
	case c.TimeoutMin > c.Timeout:
		return c, errors.Errorf("taskqueue: minimum timeout %v is above the timeout %v", c.TimeoutMin, c.Timeout)
	case c.Factor < 0:
		return c, errors.Errorf("taskqueue: timeout factor must be positive, not %v", c.Factor)
	case c.MaxTimeouts < 0 || c.Window < 0 || c.MinSamples < 0:
		return c, errors.Errorf("taskqueue: max timeouts, window and min samples must be positive")
	case c.Stragglers > StragglersBackup:
		return c, errors.Errorf("taskqueue: unknown straggler policy %d", c.Stragglers)
	case c.MinSamples > c.Window:
		return c, errors.Errorf("taskqueue: min samples %d is above the window %d", c.MinSamples, c.Window)
	}
	return c, nil
}
