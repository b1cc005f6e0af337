package masterbench

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"github.com/pkg/errors"
	"github.com/sirupsen/logrus"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/trainmaster/master/go/recordio"
)

// Config configures a run. Zero fields take the defaults.
type Config struct {
	Master     string           // path of the master binary; required
	Client     *clientv3.Client // the etcd under test; required
	Endpoints  []string         // the same etcd, for the master's -endpoints and the metrics page
	MasterArgs []string         // more master flags (TLS, auth)
	Metrics    *http.Client     // reads <endpoint>/metrics; default http.DefaultClient
	Dir        string           // datasets and master logs; required

	Chunks        []int         // dataset sizes; default 1,000
	Trainers      []int         // concurrent trainers; default 1 and 64
	ChunksPerTask int           // default 1: every dispatch is one task of one chunk
	Warmup        time.Duration // before each window; default 1s
	Duration      time.Duration // of each window; default 5s
	Failover      bool          // also time a standby taking over each dataset
	Codec         string        // the synthetic trainers' encoding: "gob" (default) or "json"
	Log           logrus.FieldLogger
}

func (c Config) withDefaults() (Config, error) {
	if c.Master == "" || c.Client == nil || c.Dir == "" || len(c.Endpoints) == 0 {
		return c, errors.New("masterbench: Master, Client, Endpoints and Dir are required")
	}
	if len(c.Chunks) == 0 {
		c.Chunks = []int{1000}
	}
	if len(c.Trainers) == 0 {
		c.Trainers = []int{1, 64}
	}
	for _, n := range append(append([]int(nil), c.Chunks...), c.Trainers...) {
		if n <= 0 {
			return c, errors.Errorf("masterbench: chunks and trainers must be positive, not %d", n)
		}
	}
	if c.ChunksPerTask == 0 {
		c.ChunksPerTask = 1
	}
	switch c.Codec {
	case "":
		c.Codec = "gob"
	case "gob", "json":
	default:
		return c, errors.Errorf("masterbench: codec %q: want gob or json", c.Codec)
	}
	if c.Warmup == 0 {
		c.Warmup = time.Second
	}
	if c.Duration == 0 {
		c.Duration = 5 * time.Second
	}
	if c.Metrics == nil {
		c.Metrics = http.DefaultClient
	}
	if c.Log == nil {
		c.Log = logrus.StandardLogger()
	}
	return c, nil
}

// Report is what a run measured.
type Report struct {
	CPUs          int             `json:"cpus"`
	Codec         string          `json:"codec"`
	ChunksPerTask int             `json:"chunks_per_task"`
	Warmup        time.Duration   `json:"warmup_ns"`
	Duration      time.Duration   `json:"duration_ns"`
	Datasets      []DatasetResult `json:"datasets"`
}

// DatasetResult is what was measured on one dataset.
type DatasetResult struct {
	Chunks int `json:"chunks"`
	Tasks  int `json:"tasks"`
	// Accept is how long ReportDataset took: indexing the files and
	// saving the index to etcd.
	Accept time.Duration `json:"accept_ns"`
	Memory Memory        `json:"master_memory"` // the leader's, after the runs
	// Failover is the time from SIGTERM to the leader until the standby
	// answers with the state restored (zero: not measured).
	Failover       time.Duration `json:"failover_ns,omitempty"`
	FailoverMemory Memory        `json:"failover_master_memory"`
	Runs           []Result      `json:"runs"`
}

// Result is one window of trainers, and the bare transactions before it.
type Result struct {
	Trainers    int       `json:"trainers"`
	Tasks       int       `json:"tasks"` // dispatches in the window
	TasksPerSec float64   `json:"tasks_per_sec"`
	Latency     Latencies `json:"latency"`
	// NoTask counts calls answered "no task available": the last tasks of
	// a pass were out with other trainers.
	NoTask         int     `json:"no_task"`
	BareTxnsPerSec float64 `json:"bare_txns_per_sec"`
	Ratio          float64 `json:"ratio"` // TasksPerSec / BareTxnsPerSec
	// Bytes per dispatch: what etcd appended to its WAL, and the size of
	// the keys and values put (zero when the metrics were unreadable).
	WALBytesPerTask float64 `json:"wal_bytes_per_task"`
	PutBytesPerTask float64 `json:"put_bytes_per_task"`
}

// Run measures every dataset size, each with every number of trainers.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	rep := &Report{CPUs: runtime.NumCPU(), ChunksPerTask: cfg.ChunksPerTask, Warmup: cfg.Warmup, Duration: cfg.Duration, Codec: cfg.Codec}
	for _, chunks := range cfg.Chunks {
		d, err := runDataset(ctx, cfg, chunks)
		if err != nil {
			return rep, errors.Wrapf(err, "masterbench: %d chunks", chunks)
		}
		rep.Datasets = append(rep.Datasets, d)
	}
	return rep, nil
}

// runDataset starts a master in a namespace of its own, reports a new
// dataset and runs the trainers; the namespace is deleted afterwards.
func runDataset(ctx context.Context, cfg Config, chunks int) (DatasetResult, error) {
	res := DatasetResult{Chunks: chunks, Tasks: (chunks + cfg.ChunksPerTask - 1) / cfg.ChunksPerTask}
	dir := filepath.Join(cfg.Dir, fmt.Sprintf("chunks-%d", chunks))
	pattern, err := writeDataset(dir, chunks)
	if err != nil {
		return res, err
	}
	ns := fmt.Sprintf("/masterbench/%d", time.Now().UnixNano())
	defer cfg.Client.Delete(context.WithoutCancel(ctx), ns+"/", clientv3.WithPrefix())
	m := newMasters(cfg, dir, ns)
	defer m.stopAll()
	leader, addr, err := m.startLeader(ctx)
	if err != nil {
		return res, err
	}
	cfg.Log.WithFields(logrus.Fields{"chunks": chunks, "addr": addr}).Info("master serving; reporting the dataset")
	start := time.Now()
	if err := reportDataset(ctx, addr, pattern); err != nil {
		return res, err
	}
	res.Accept = time.Since(start)
	for _, trainers := range cfg.Trainers {
		r, err := runWindow(ctx, cfg, ns, addr, trainers)
		if err != nil {
			return res, err
		}
		cfg.Log.WithFields(logrus.Fields{"chunks": chunks, "trainers": trainers, "tasks_per_sec": int(r.TasksPerSec),
			"bare_txns_per_sec": int(r.BareTxnsPerSec)}).Info("window measured")
		res.Runs = append(res.Runs, r)
	}
	if res.Memory, err = readMemory(leader.Pid()); err != nil {
		return res, err
	}
	if cfg.Failover {
		res.Failover, res.FailoverMemory, err = m.failover(ctx, leader, addr)
	}
	return res, err
}

// runWindow measures bare transactions, then trainers, at one concurrency.
func runWindow(ctx context.Context, cfg Config, ns, addr string, trainers int) (Result, error) {
	w := window{Warmup: cfg.Warmup, Duration: cfg.Duration}
	bare, err := bareTxns(ctx, cfg.Client, ns+"/bare", trainers, w)
	if err != nil {
		return Result{}, err
	}
	before, metricsErr := scrapeMetrics(ctx, cfg.Metrics, cfg.Endpoints[0], walBytesMetric, putBytesMetric)
	got, err := runTrainers(ctx, dialer(cfg.Codec), addr, trainers, w)
	if err != nil {
		return Result{}, err
	}
	after, err := scrapeMetrics(ctx, cfg.Metrics, cfg.Endpoints[0], walBytesMetric, putBytesMetric)
	if metricsErr == nil && err != nil {
		metricsErr = err
	}
	r := Result{
		Trainers: trainers, Tasks: got.Ops, NoTask: got.Idle, Latency: summarise(got.Latencies),
		TasksPerSec:    float64(got.Ops) / cfg.Duration.Seconds(),
		BareTxnsPerSec: float64(bare.Ops) / cfg.Duration.Seconds(),
	}
	if r.BareTxnsPerSec > 0 {
		r.Ratio = r.TasksPerSec / r.BareTxnsPerSec
	}
	if metricsErr != nil {
		cfg.Log.WithError(metricsErr).Warn("no etcd bytes per dispatch")
		return r, nil
	}
	// The warm-up and the tail of the window write too: divide by every
	// dispatch the trainers made between the two readings.
	if all := got.Total; all > 0 {
		r.WALBytesPerTask = (after[walBytesMetric] - before[walBytesMetric]) / float64(all)
		r.PutBytesPerTask = (after[putBytesMetric] - before[putBytesMetric]) / float64(all)
	}
	return r, nil
}

// writeDataset writes chunks one-record chunks into files of at most
// 100,000 chunks under dir, unless an earlier run left them there.
func writeDataset(dir string, chunks int) (string, error) {
	const perFile = 100000
	pattern := filepath.Join(dir, "part-*.recordio")
	done := filepath.Join(dir, "complete")
	if _, err := os.Stat(done); err == nil {
		return pattern, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", errors.Wrap(err, "dataset")
	}
	for f := 0; f*perFile < chunks; f++ {
		n := min(perFile, chunks-f*perFile)
		record := func(i int) []byte { return fmt.Appendf(nil, "file %06d record %09d", f, i) }
		path := filepath.Join(dir, fmt.Sprintf("part-%06d.recordio", f))
		// A limit of one record's size puts every record in a chunk of its own.
		if err := recordio.WriteFile(path, n, record, recordio.WithMaxChunkBytes(len(record(0)))); err != nil {
			return "", errors.Wrapf(err, "dataset %s", path)
		}
	}
	return pattern, errors.Wrap(os.WriteFile(done, []byte(strconv.Itoa(chunks)+"\n"), 0o644), "dataset")
}
