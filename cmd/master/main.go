// Command master is the master process of elastic distributed training: it
// accepts the dataset trainers report, hands out tasks over net/rpc, takes
// them back when a trainer fails or stalls, and keeps its queues in etcd
// under a leader lock, so that a standby master takes over when it dies.
//
//	master [flags]            campaign for the lock, serve while leading
//	master inspect [flags]    print the state kept in etcd
//	master bench [flags]      measure dispatch against etcd (package masterbench)
//	master watch [flags]      follow the job's progress live in the terminal (watch.go)
//
// Without -endpoints the master starts an embedded single-member etcd in
// -data-dir on loopback, and uses it exactly like an external one; its
// endpoint is written to <data-dir>/endpoint for other processes.
//
// Every flag can also be set from the environment as MASTER_<FLAG> (dashes
// become underscores, e.g. MASTER_TASK_TIMEOUT=5m, MASTER_ETCD_PASSWORD) or
// from a file named by -config holding "flag value" lines (configfile.go).
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/namsral/flag"
	"github.com/pkg/errors"
	"github.com/sirupsen/logrus"

	"github.com/trainmaster/master/go/discovery"
	"github.com/trainmaster/master/internal/dataset"
	"github.com/trainmaster/master/internal/etcdconn"
	"github.com/trainmaster/master/internal/leader"
	"github.com/trainmaster/master/internal/master"
	"github.com/trainmaster/master/internal/monitor"
	"github.com/trainmaster/master/internal/taskqueue"
)

type options struct {
	addr          string
	advertise     string
	namespace     string
	ttl           int
	dataDir       string
	etcd          etcdconn.Options
	chunksPerTask int
	dataset       string // comma-separated patterns the master serves itself
	datasetsFile  string // the datasets the master declares (datasets.go)
	maxDatasets   int
	datasetRoot   string
	queue         taskqueue.Config
	logLevel      string
	port          portOptions // the trainer port's limits and locks
	httpAddr      string      // the side door: metrics, probes, status page
	httpAdvertise string
	maxTrainers   int // the trainers tracked at most for per-trainer series in /metrics
	trainerGrace  time.Duration
	shuffleSeed   uint64
	version       bool
	// the data checkpoints the job keeps, and how long one waits for its
	// trainers
	checkpointsKept int
	checkpointWait  time.Duration

	trainersTracked int // the trainers the monitor tracks, but for those holding tasks
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSetWithEnvPrefix("master", "MASTER", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var config configPath
	fs.Var(&config, flag.DefaultConfigFlagname, "read flags from this `file` (lines of: flag value)")
	fs.StringVar(&o.addr, "addr", ":8080", "listen `address` for trainers (net/rpc over TCP, in TLS with -tls-cert) while leading; the default takes every interface")
	fs.StringVar(&o.advertise, "advertise", "", "`address` published for trainers (default: -addr when it names a host, else the host name and port)")
	fs.StringVar(&o.httpAddr, "http-addr", "", "listen `address` of the status page, /metrics (Prometheus), /healthz and /readyz, on every master (standbys too); off when empty")
	fs.StringVar(&o.httpAdvertise, "http-advertise", "", "`address` of the status page written in this master's lock key, for `master watch` and the other masters' pages (default: -http-addr when it names a host, else the host name and port)")
	fs.IntVar(&o.maxTrainers, "max-trainers-shown", monitor.DefaultTrainerSeries, "most trainers /metrics shows one by one: while the trainers tracked are at most this many, each has its trainmaster_trainer_* series; above it none has (the job-wide trainer gauges and histograms count them all)")
	fs.IntVar(&o.trainersTracked, "max-trainers", monitor.DefaultMaxTrainers, "most trainers the monitor tracks (status page, /status.json, /metrics), each counted exactly; every trainer holding a task is tracked beyond it, the least recently seen of the others dropped first")
	o.port.register(fs)
	o.etcd.Register(fs)
	fs.StringVar(&o.namespace, "namespace", "", "`prefix` of every etcd key of this job, so several jobs share one etcd")
	fs.IntVar(&o.ttl, "ttl", 5, "session TTL in `seconds`: how long a dead master holds the lock")
	fs.StringVar(&o.dataDir, "data-dir", "./master-data", "`directory` of the embedded etcd, used when -endpoints is not given")
	fs.StringVar(&o.dataset, "dataset", "", "serve this dataset: comma-separated RecordIO file `patterns` (a comma inside a pattern is written [,]); trainers' reports are then only compared with it, nothing they name is opened")
	fs.StringVar(&o.datasetsFile, "datasets", "", "declare the job's datasets from this JSON `file` (see doc/protocol.md: named datasets, e.g. train and eval; files or index ranges); trainers' reports of them are then only compared with it")
	fs.IntVar(&o.maxDatasets, "max-datasets", master.DefaultMaxDatasets, "most datasets a job holds: trainers declare no more")
	fs.StringVar(&o.datasetRoot, "dataset-root", "", "every file of the dataset, reported or given by -dataset, must be inside this `directory` (symbolic links followed); others are refused unopened")
	fs.IntVar(&o.chunksPerTask, "chunks-per-task", master.DefaultChunksPerTask, "RecordIO chunks grouped into one task")
	fs.IntVar(&o.queue.Passes, "passes", taskqueue.DefaultPasses, "passes over the dataset; 0: without end, pass after pass until the job is stopped")
	fs.DurationVar(&o.queue.Timeout, "task-timeout", taskqueue.DefaultTimeout, "longest timeout of a task, and the timeout until enough tasks finished to average")
	fs.DurationVar(&o.queue.TimeoutMin, "task-timeout-min", taskqueue.DefaultTimeoutMin, "shortest timeout of a task")
	fs.Float64Var(&o.queue.Factor, "task-timeout-factor", taskqueue.DefaultFactor, "timeout = factor x moving average of seconds per record x records of the task")
	fs.IntVar(&o.queue.MaxTimeouts, "task-timeout-max", taskqueue.DefaultMaxTimeouts, "a task that times out or fails more often than this in a pass is discarded for the pass")
	fs.DurationVar(&o.queue.Reassign, "task-reassign", taskqueue.DefaultReassign, "a task that timed out waits this long for another trainer than the one it was taken from (negative: no wait)")
	fs.Uint64Var(&o.shuffleSeed, "shuffle-seed", 0, "hand out each pass's tasks, and have trainers train each task's records, in an order drawn from this `seed`, stored with the dataset (0: file order)")
	stragglers := fs.String("stragglers", "split", "what a trainer that finds todo empty gets while a task runs 1.5 times past its expected time: off (nothing), `split` (the rest of it, cut off as a piece, when its trainer reports progress; else a backup) or backup (a second dispatch of it)")
	fs.DurationVar(&o.trainerGrace, "trainer-grace", master.DefaultTrainerGrace, "a named trainer holding tasks that has no connection for this long is lost: its tasks go back to the front of todo at once, not counted as timeouts (negative: never)")
	fs.IntVar(&o.checkpointsKept, "checkpoints-kept", master.DefaultCheckpointsKept, "data checkpoints kept (the newest; pinned ones are kept besides): a rewind to an older one is refused")
	fs.DurationVar(&o.checkpointWait, "checkpoint-wait", master.DefaultCheckpointWait, "how long a data checkpoint waits for all its trainers to report before it is refused as incomplete")
	fs.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.BoolVar(&o.version, "version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if config.path != "" {
		if err := applyConfig(fs, config.path); err != nil {
			return o, err
		}
	}
	o.port.maxConnsGiven = len(setFlags(fs, "max-conns")) > 0
	if fs.NArg() > 0 {
		return o, errors.Errorf("unexpected arguments %q", fs.Args())
	}
	o.queue.Endless = o.queue.Passes == 0
	var err error
	if o.queue.Stragglers, err = taskqueue.ParseStragglers(*stragglers); err != nil {
		return o, errors.WithMessage(err, "-stragglers")
	}
	if o.maxDatasets < 1 {
		return o, errors.Errorf("-max-datasets must be positive, not %d", o.maxDatasets)
	}
	if o.maxTrainers < 1 {
		return o, errors.Errorf("-max-trainers-shown must be positive, not %d", o.maxTrainers)
	}
	if o.trainersTracked < 1 {
		return o, errors.Errorf("-max-trainers must be positive, not %d", o.trainersTracked)
	}
	if o.ttl < 2 {
		return o, errors.Errorf("-ttl must be at least 2 seconds (etcd's minimum lease), not %d", o.ttl)
	}
	return o, o.port.check()
}

// patterns are the patterns of -dataset, or nil without it.
func (o *options) patterns() []string {
	if o.dataset == "" {
		return nil
	}
	return strings.Split(o.dataset, ",")
}

// logDataset says at start-up where the dataset comes from and, when
// trainers choose it without a root, that a report makes this master list
// and open any file it can read.
func (o *options) logDataset(log logrus.FieldLogger) {
	fields := logrus.Fields{"root": o.datasetRoot}
	switch {
	case o.datasetsFile != "":
		log.WithFields(fields).WithField("file", o.datasetsFile).Info("datasets declared by -datasets: trainers' reports of them are only compared with it; others are decided by their first report")
	case o.dataset != "":
		log.WithFields(fields).WithField("patterns", o.patterns()).Info("dataset declared: trainers' reports are only compared with it")
	case o.datasetRoot != "":
		log.WithFields(fields).Info("dataset reported by the first trainer, inside the root only")
	default:
		log.Warn("the dataset is reported by the first trainer and may name any file this master can read: its names (not its contents) reach every trainer; " +
			"give -dataset to serve a dataset of your own, or -dataset-root to keep reports inside a directory")
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	var err error
	switch {
	case len(os.Args) > 1 && os.Args[1] == "inspect":
		err = runInspect(ctx, os.Args[2:], os.Stdout, os.Stderr)
	case len(os.Args) > 1 && os.Args[1] == "bench":
		err = runBench(ctx, os.Args[2:], os.Stdout, os.Stderr)
	case len(os.Args) > 1 && os.Args[1] == "watch":
		err = runWatch(ctx, os.Args[2:], os.Stdout, os.Stderr)
	default:
		err = run(ctx, os.Args[1:], os.Stderr)
	}
	if err != nil && err != flag.ErrHelp {
		fmt.Fprintf(os.Stderr, "master: %v\n", err)
		os.Exit(1)
	}
}

func newLogger(level string, out io.Writer) (*logrus.Logger, error) {
	log := logrus.New()
	log.SetOutput(out)
	l, err := logrus.ParseLevel(level)
	if err != nil {
		return nil, err
	}
	log.SetLevel(l)
	return log, nil
}

func run(ctx context.Context, args []string, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	if o.version {
		fmt.Fprintln(os.Stdout, versionString())
		return nil
	}
	log, err := newLogger(o.logLevel, stderr)
	if err != nil {
		return err
	}
	log.WithField("version", versionString()).Info("master starting")
	scfg := master.Config{ChunksPerTask: o.chunksPerTask, Queue: o.queue, Dataset: o.patterns(),
		DatasetConfig: dataset.Config{Root: o.datasetRoot}, TrainerGrace: o.trainerGrace, ShuffleSeed: o.shuffleSeed, MaxDatasets: o.maxDatasets,
		CheckpointsKept: o.checkpointsKept, CheckpointWait: o.checkpointWait}
	var datasets *datasetsFile
	if o.datasetsFile != "" {
		if datasets, err = readDatasets(o.datasetsFile); err != nil {
			return err
		}
		scfg.Datasets = datasets.datasets
	}
	if err := scfg.Validate(); err != nil {
		return datasets.declarationError(err) // bad queue flags and declarations fail before anything starts
	}
	port, err := o.port.serverConfig()
	if err != nil {
		return err // so do unreadable certificates and token files
	}
	o.port.logExposure(log, o.addr)
	o.logDataset(log)
	door, err := openDoor(&o)
	if err != nil {
		return errors.WithMessage(err, "-http-addr")
	}
	door.serve(ctx, &o, port, log)
	scfg.Observer = door.mon
	if len(o.etcd.Endpoints) == 0 {
		stopEtcd, err := startEmbedded(ctx, &o, log)
		if err != nil {
			return err
		}
		defer stopEtcd()
	}
	cli, err := o.etcd.Connect(ctx, log)
	if err != nil {
		return err
	}
	defer cli.Close()
	door.cli.Store(cli)
	log.WithField("endpoints", o.etcd.Endpoints).Info("connected to etcd")
	candidate := discovery.ThisProcess(door.addr)
	return leader.Run(ctx, leader.Config{
		Client: cli, Namespace: o.namespace, TTL: o.ttl, Addr: o.addr, Advertise: o.advertise,
		Service: scfg, Log: log, Server: port, Candidate: &candidate,
		Term: func(ctx context.Context, svc *master.Service) { door.mon.Follow(ctx, svc) },
	})
}

var errNotConnected = errors.New("not connected to etcd yet")
