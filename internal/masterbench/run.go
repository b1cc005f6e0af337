package masterbench

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/pkg/errors"
	"github.com/sirupsen/logrus"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/trainmaster/master/go/recordio"
	"github.com/trainmaster/master/internal/proc"
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
	// Progress makes every synthetic trainer report progress once in
	// every task, before it asks for the next: a fenced write per task,
	// the most -progress-interval can cost (a report every task).
	Progress bool
	// Door says whether each row runs against a master with its HTTP side
	// door: DoorOff (the default: no -http-addr, trainers send no name),
	// DoorOn (-http-addr on loopback, every trainer sends a name of its
	// own, and /metrics and /status.json are read once a second during the
	// window), or DoorBoth: each row both without and with, against two
	// masters of the same dataset, each in a namespace of its own, in four
	// windows: off, on, on, off or on, off, off, on, drawn at random for
	// each row. The windows' rates drift during a row, and not evenly
	// (doc/performance.md): the symmetric order cancels a steady drift,
	// the draw lets repeated runs average out the rest.
	Door string
	// Profile, if set, is a directory where the leaders write a CPU
	// profile of each measured window; the caller puts it in the masters'
	// environment as ProfileEnv.
	Profile string
	// CheckpointEvery makes every synthetic trainer take a data
	// checkpoint of its own (Master.Checkpoint, one trainer) every that
	// many tasks; 0: none. With CheckpointCompare each row runs in four
	// windows of the same master, without and with the checkpoints, off,
	// on, on, off or the reverse (as DoorBoth), and CheckpointCost
	// compares them. The trainers are named in every window of such a
	// row, with checkpoints or not (a checkpoint names its trainer, and
	// named trainers cost the master more than anonymous ones): the
	// windows differ by the checkpoints alone.
	CheckpointEvery   int
	CheckpointCompare bool
	// Paced are the numbers of trainers of RunPaced, each in a row of its
	// own; each trainer calls GetTask once per CallEvery (default
	// DefaultCallEvery), and the requeue is awaited for at most
	// RequeueWait (default DefaultRequeueWait). Run ignores them.
	Paced       []int
	CallEvery   time.Duration
	RequeueWait time.Duration
	Log         logrus.FieldLogger
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
	switch c.Door {
	case "":
		c.Door = DoorOff
	case DoorOff, DoorOn, DoorBoth:
	default:
		return c, errors.Errorf("masterbench: door %q: want %s, %s or %s", c.Door, DoorOff, DoorOn, DoorBoth)
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
	Door          string          `json:"door"`               // off, on or both
	Progress      bool            `json:"progress,omitempty"` // a progress report in every task
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
	// Memory is the leader's after the runs: the one without the door,
	// unless the door is on alone; DoorMemory the one with the door, when
	// both ran.
	Memory     Memory  `json:"master_memory"`
	DoorMemory *Memory `json:"door_master_memory,omitempty"`
	// Failover is the time from SIGTERM to the leader until the standby
	// answers with the state restored (zero: not measured), measured on
	// the master of Memory.
	Failover       time.Duration `json:"failover_ns,omitempty"`
	FailoverMemory Memory        `json:"failover_master_memory"`
	// Runs are the windows in the order they ran: with the door both,
	// four for each number of trainers (DoorCost.Order).
	Runs []Result `json:"runs"`
	// DoorCost compares, with the door both, the windows of each number
	// of trainers with the door to those without.
	DoorCost []DoorCost `json:"door_cost,omitempty"`
	// CheckpointCost compares, with Config.CheckpointCompare, the windows
	// of each number of trainers with checkpoints to those without (its
	// Order says "on" for the windows with them).
	CheckpointCost []DoorCost `json:"checkpoint_cost,omitempty"`
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

	// Door: the master had its side door open, the trainers sent names,
	// and the door was read during the window: Scrapes pages (/metrics and
	// /status.json, each read in full) and ScrapeErrors failed reads.
	// TrainersShown is the trainers_total of the last /status.json.
	Door bool `json:"door"`
	// Checkpoints: every trainer took a checkpoint every
	// Config.CheckpointEvery tasks; CheckpointLatency is their calls'.
	Checkpoints       bool       `json:"checkpoints,omitempty"`
	CheckpointLatency *Latencies `json:"checkpoint_latency,omitempty"`
	Scrapes           int        `json:"scrapes,omitempty"`
	ScrapeErrors      int        `json:"scrape_errors,omitempty"`
	TrainersShown     int        `json:"trainers_shown,omitempty"`
	// Profile is the path of the leader's CPU profile of the window
	// (Config.Profile).
	Profile string `json:"cpu_profile,omitempty"`
}

// Run measures every dataset size, each with every number of trainers.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	rep := &Report{CPUs: runtime.NumCPU(), ChunksPerTask: cfg.ChunksPerTask, Warmup: cfg.Warmup, Duration: cfg.Duration,
		Codec: cfg.Codec, Door: cfg.Door, Progress: cfg.Progress}
	for _, chunks := range cfg.Chunks {
		d, err := runDataset(ctx, cfg, chunks)
		if err != nil {
			return rep, errors.Wrapf(err, "masterbench: %d chunks", chunks)
		}
		rep.Datasets = append(rep.Datasets, d)
	}
	return rep, nil
}

// job is a master process's job on one dataset, with or without the door.
type job struct {
	door    bool
	ns      string
	masters *masters
	leader  *proc.Proc
	addr    string    // the trainers' port
	doorURL string    // the status page, with the door
	prof    *profiler // nil unless Config.Profile
}

// start starts j's masters on the dataset in dir, its leader passing the
// lines it logs to onLine (nil: none), logs it serving with fields, and
// reports the dataset of pattern to it; it returns how long the report
// took. j.masters is set, to be stopped, even when it fails.
func (j *job) start(ctx context.Context, cfg Config, dir, pattern string, onLine func(string), fields logrus.Fields) (time.Duration, error) {
	j.masters = newMasters(cfg, dir, j.ns, j.door)
	var err error
	if j.leader, j.addr, j.doorURL, err = j.masters.startLeader(ctx, onLine); err != nil {
		return 0, err
	}
	fields["addr"], fields["door"] = j.addr, j.doorURL
	cfg.Log.WithFields(fields).Info("master serving; reporting the dataset")
	start := time.Now()
	err = reportDataset(ctx, j.addr, pattern)
	return time.Since(start), err
}

// runDataset starts a master per door mode, each in a namespace of its own,
// reports a new dataset to each and runs the trainers; the namespaces are
// deleted afterwards.
func runDataset(ctx context.Context, cfg Config, chunks int) (DatasetResult, error) {
	res := DatasetResult{Chunks: chunks, Tasks: (chunks + cfg.ChunksPerTask - 1) / cfg.ChunksPerTask}
	dir, pattern, err := writeDataset(cfg.Dir, chunks)
	if err != nil {
		return res, err
	}
	ns := fmt.Sprintf("/masterbench/%d", time.Now().UnixNano())
	defer cfg.Client.Delete(context.WithoutCancel(ctx), ns+"/", clientv3.WithPrefix())
	var jobs []*job
	for _, door := range doors(cfg.Door) {
		j := &job{door: door, ns: ns + "/door-off"}
		if door {
			j.ns = ns + "/door-on"
		}
		accept, err := j.start(ctx, cfg, dir, pattern, nil, logrus.Fields{"chunks": chunks})
		defer j.masters.stopAll()
		if err != nil {
			return res, err
		}
		if cfg.Profile != "" {
			j.prof = &profiler{dir: cfg.Profile, p: j.leader}
		}
		if len(jobs) == 0 {
			res.Accept = accept
		}
		jobs = append(jobs, j)
	}
	for _, trainers := range cfg.Trainers {
		rows, err := runRow(ctx, cfg, jobs, trainers)
		if err != nil {
			return res, err
		}
		res.Runs = append(res.Runs, rows...)
		switch {
		case len(jobs) == 2:
			res.DoorCost = append(res.DoorCost, doorCost(trainers, rows, func(r Result) bool { return r.Door }))
		case cfg.CheckpointCompare:
			res.CheckpointCost = append(res.CheckpointCost, doorCost(trainers, rows, func(r Result) bool { return r.Checkpoints }))
		}
	}
	for i, j := range jobs {
		mem, err := readMemory(j.leader.Pid())
		if err != nil {
			return res, err
		}
		if i == 0 {
			res.Memory = mem
		} else {
			res.DoorMemory = &mem
		}
	}
	if cfg.Failover {
		res.Failover, res.FailoverMemory, err = jobs[0].masters.failover(ctx, jobs[0].leader, jobs[0].addr)
	}
	return res, err
}

// doorClient reads the side door, as Prometheus and a browser would: over
// connections kept open between reads.
var doorClient = &http.Client{Timeout: 10 * time.Second}

// runWindow measures bare transactions, then trainers, at one concurrency;
// with the door, it reads the door during the window.
func runWindow(ctx context.Context, cfg Config, j *job, trainers int, checkpoints bool) (Result, error) {
	w := window{Warmup: cfg.Warmup, Duration: cfg.Duration}
	bare, err := bareTxns(ctx, cfg.Client, j.ns+"/bare", trainers, w)
	if err != nil {
		return Result{}, err
	}
	before, metricsErr := scrapeMetrics(ctx, cfg.Metrics, cfg.Endpoints[0], walBytesMetric, putBytesMetric)
	from := time.Now().Add(w.Warmup)
	until := from.Add(w.Duration)
	sideCtx, stopSide := context.WithCancel(ctx)
	var side sync.WaitGroup
	var read scrapes
	var profile string
	if j.door {
		side.Go(func() { read = scrapeDoor(sideCtx, doorClient, j.doorURL, from, until) })
	}
	if j.prof != nil {
		side.Go(func() { profile = j.prof.profile(sideCtx, from, until) })
	}
	every := 0
	if checkpoints {
		every = cfg.CheckpointEvery
	}
	got, err := runTrainers(ctx, dialer(cfg.Codec), j.addr, trainers, load{named: j.door || cfg.CheckpointEvery > 0, progress: cfg.Progress, checkpointEvery: every}, w)
	if err != nil {
		stopSide()
	}
	side.Wait()
	stopSide()
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
		Door:           j.door, Scrapes: read.ok, ScrapeErrors: read.failed, TrainersShown: read.trainers, Profile: profile,
		Checkpoints: checkpoints,
	}
	if checkpoints {
		l := summarise(got.Checkpoints)
		r.CheckpointLatency = &l
	}
	if r.BareTxnsPerSec > 0 {
		r.Ratio = r.TasksPerSec / r.BareTxnsPerSec
	}
	if read.err != nil {
		cfg.Log.WithError(read.err).WithField("failed", read.failed).Warn("reads of the side door failed")
	}
	if profile != "" {
		cfg.Log.WithField("profile", profile).Info("CPU profile of the leader during the window")
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
// 100,000 chunks under root/chunks-<chunks>, unless an earlier run left
// them there; it returns that directory and the files' pattern.
func writeDataset(root string, chunks int) (dir, pattern string, err error) {
	const perFile = 100000
	dir = filepath.Join(root, fmt.Sprintf("chunks-%d", chunks))
	pattern = filepath.Join(dir, "part-*.recordio")
	done := filepath.Join(dir, "complete")
	if _, err := os.Stat(done); err == nil {
		return dir, pattern, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", errors.Wrap(err, "dataset")
	}
	for f := 0; f*perFile < chunks; f++ {
		n := min(perFile, chunks-f*perFile)
		record := func(i int) []byte { return fmt.Appendf(nil, "file %06d record %09d", f, i) }
		path := filepath.Join(dir, fmt.Sprintf("part-%06d.recordio", f))
		// A limit of one record's size puts every record in a chunk of its own.
		if err := recordio.WriteFile(path, n, record, recordio.WithMaxChunkBytes(len(record(0)))); err != nil {
			return "", "", errors.Wrapf(err, "dataset %s", path)
		}
	}
	return dir, pattern, errors.Wrap(os.WriteFile(done, []byte(strconv.Itoa(chunks)+"\n"), 0o644), "dataset")
}
