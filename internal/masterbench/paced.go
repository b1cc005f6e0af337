package masterbench

import (
	"context"
	"runtime"
	"slices"
	"time"

	"github.com/pkg/errors"

	"github.com/trainmaster/master/internal/proc"
)

// The paced mode (RunPaced) measures the master as a large job uses it:
// many trainers, each on its own connection, each calling GetTask once per
// Config.CallEvery at a phase of its own, as trainers taking a few seconds
// per task do, instead of as fast as the master answers. For each number
// of trainers in Config.Paced it starts a fresh master with its side door
// and room for their connections (-max-conns; its other flags at their
// defaults, but endless passes over a dataset larger than the row uses),
// connects the trainers, lets them call for a period and Config.Warmup,
// measures Config.Duration, then closes a tenth of the trainers'
// connections at once and times until every task they held has been
// dispatched again (the master's -trainer-grace, at its default, then the
// others' calls).

// DefaultCallEvery and DefaultRequeueWait are the defaults of
// Config.CallEvery and Config.RequeueWait.
const (
	DefaultCallEvery   = 5 * time.Second
	DefaultRequeueWait = time.Minute
)

// PacedReport is what a paced run measured.
type PacedReport struct {
	CPUs        int           `json:"cpus"`
	Codec       string        `json:"codec"`
	Progress    bool          `json:"progress,omitempty"`
	CallEvery   time.Duration `json:"call_every_ns"`
	Warmup      time.Duration `json:"warmup_ns"` // after the first period of calls
	Duration    time.Duration `json:"duration_ns"`
	RequeueWait time.Duration `json:"requeue_wait_ns"`
	Rows        []PacedResult `json:"rows"`
}

// PacedResult is one number of trainers, against a master of its own.
type PacedResult struct {
	Trainers int `json:"trainers"`
	Tasks    int `json:"tasks"` // in a pass of the dataset, more than the row dispatches
	// Connect is how long the bench took to open the trainers'
	// connections, one after the other, before any call.
	Connect      time.Duration `json:"connect_ns"`
	TargetPerSec float64       `json:"target_calls_per_sec"` // trainers / CallEvery
	GetTask      Calls         `json:"get_task"`
	TaskProgress *Calls        `json:"task_progress,omitempty"`
	// Errors counts the calls that failed, in the window or not (the
	// warm-up, the requeue); FirstError is the first.
	Errors     int    `json:"errors"`
	FirstError string `json:"first_error,omitempty"`
	// Master is the master process at the end of the window.
	Master Process `json:"master"`
	// Metrics is the master's /metrics, read once a second in the window.
	Metrics MetricsPage `json:"metrics_page"`
	// What the histograms observed in the window: etcd's WAL fsyncs, the
	// master's commits and the task entries of each.
	Fsync       Quantiles `json:"etcd_wal_fsync_seconds"`
	Commit      Quantiles `json:"commit_seconds"`
	CommitGroup Quantiles `json:"commit_group_entries"`
	Requeue     Requeue   `json:"requeue"`
}

// Calls are the calls of one kind begun in the window.
type Calls struct {
	Count  int     `json:"count"`
	PerSec float64 `json:"per_sec"`
	// Latency is the answered calls': errors are counted apart.
	Latency Latencies `json:"latency"`
	// Late counts the calls made after their time, because the trainer's
	// previous call was still running then; they went at once.
	Late   int `json:"late"`
	NoTask int `json:"no_task,omitempty"` // GetTask answered "no task available"
}

// MetricsPage is what reading the master's /metrics took.
type MetricsPage struct {
	Reads  int       `json:"reads"`
	Failed int       `json:"failed"`
	Bytes  int       `json:"bytes"` // of the last page read
	Time   Latencies `json:"time"`  // to read a page in full
}

// Requeue is how long the tasks of trainers whose connections closed took
// to be dispatched again.
type Requeue struct {
	Victims int `json:"victims"`  // connections closed at once
	Held    int `json:"held"`     // tasks they held
	Again   int `json:"requeued"` // of those, dispatched again within the wait
	// First and All are the times from the close to the first task
	// dispatched again and to the last; All is zero when the wait ran out.
	First    time.Duration `json:"first_ns"`
	All      time.Duration `json:"all_ns"`
	TimedOut bool          `json:"timed_out"`
	// Grace is the master's -trainer-grace, as it logged it losing a
	// trainer ("" if it lost none).
	Grace string `json:"trainer_grace"`
}

func (c Config) pacedDefaults() (Config, error) {
	c, err := c.withDefaults()
	if err != nil {
		return c, err
	}
	if c.CallEvery == 0 {
		c.CallEvery = DefaultCallEvery
	}
	if c.RequeueWait == 0 {
		c.RequeueWait = DefaultRequeueWait
	}
	if c.CallEvery < 0 || c.RequeueWait < 0 {
		return c, errors.New("masterbench: the call period and the requeue wait must be positive")
	}
	if len(c.Paced) == 0 {
		return c, errors.New("masterbench: no numbers of paced trainers")
	}
	for _, n := range c.Paced {
		if n <= 0 {
			return c, errors.Errorf("masterbench: trainers must be positive, not %d", n)
		}
	}
	return c, checkDescriptors(slices.Max(c.Paced), proc.FileLimit())
}

// RunPaced measures each number of trainers of Config.Paced.
func RunPaced(ctx context.Context, cfg Config) (*PacedReport, error) {
	cfg, err := cfg.pacedDefaults()
	if err != nil {
		return nil, err
	}
	rep := &PacedReport{CPUs: runtime.NumCPU(), Codec: cfg.Codec, Progress: cfg.Progress, CallEvery: cfg.CallEvery,
		Warmup: cfg.Warmup, Duration: cfg.Duration, RequeueWait: cfg.RequeueWait}
	for _, n := range cfg.Paced {
		r, err := runPacedRow(ctx, cfg, n)
		if err != nil {
			return rep, errors.WithMessagef(err, "masterbench: %d paced trainers", n)
		}
		rep.Rows = append(rep.Rows, r)
	}
	return rep, nil
}

// spareDescriptors are the descriptors a process needs besides the
// trainers' connections: etcd's (embedded in the bench), logs, the side
// door.
const spareDescriptors = 256

// checkDescriptors says why n trainers cannot run under a limit of open
// descriptors (0: unknown): the bench holds one end of each connection
// and the master, which inherits the limit, the other.
func checkDescriptors(n int, limit uint64) error {
	if need := uint64(n + spareDescriptors); limit > 0 && need > limit {
		return errors.Errorf("masterbench: %d trainers need about %d open files in the bench and as many in the master, over RLIMIT_NOFILE %d (raise ulimit -n)",
			n, need, limit)
	}
	return nil
}
