// Command master is the master process of elastic distributed training: it
// accepts the dataset trainers report, hands out tasks over net/rpc, takes
// them back when a trainer fails or stalls, and keeps its queues in etcd
// under a leader lock, so that a standby master takes over when it dies.
//
//	master [flags]            campaign for the lock, serve while leading
//	master inspect [flags]    print the state kept in etcd
//	master bench [flags]      measure dispatch against etcd (package masterbench)
//
// Without -endpoints the master starts an embedded single-member etcd in
// -data-dir on loopback, and uses it exactly like an external one; its
// endpoint is written to <data-dir>/endpoint for other processes.
//
// Every flag can also be set from the environment as MASTER_<FLAG> (dashes
// become underscores, e.g. MASTER_TASK_TIMEOUT=5m, MASTER_ETCD_PASSWORD) or
// from a file named by -config holding "flag value" lines.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/namsral/flag"
	"github.com/sirupsen/logrus"

	"github.com/trainmaster/master/internal/etcdconn"
	"github.com/trainmaster/master/internal/leader"
	"github.com/trainmaster/master/internal/master"
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
	queue         taskqueue.Config
	logLevel      string
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSetWithEnvPrefix("master", "MASTER", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.String(flag.DefaultConfigFlagname, "", "read flags from this `file` (lines of: flag value)")
	fs.StringVar(&o.addr, "addr", ":8080", "listen `address` for trainers (net/rpc over TCP) while leading")
	fs.StringVar(&o.advertise, "advertise", "", "`address` published for trainers (default: -addr when it names a host, else the host name and port)")
	o.etcd.Register(fs)
	fs.StringVar(&o.namespace, "namespace", "", "`prefix` of every etcd key of this job, so several jobs share one etcd")
	fs.IntVar(&o.ttl, "ttl", 5, "session TTL in `seconds`: how long a dead master holds the lock")
	fs.StringVar(&o.dataDir, "data-dir", "./master-data", "`directory` of the embedded etcd, used when -endpoints is not given")
	fs.IntVar(&o.chunksPerTask, "chunks-per-task", master.DefaultChunksPerTask, "RecordIO chunks grouped into one task")
	fs.IntVar(&o.queue.Passes, "passes", taskqueue.DefaultPasses, "passes over the dataset")
	fs.DurationVar(&o.queue.Timeout, "task-timeout", taskqueue.DefaultTimeout, "longest timeout of a task, and the timeout until enough tasks finished to average")
	fs.DurationVar(&o.queue.TimeoutMin, "task-timeout-min", taskqueue.DefaultTimeoutMin, "shortest timeout of a task")
	fs.Float64Var(&o.queue.Factor, "task-timeout-factor", taskqueue.DefaultFactor, "timeout = factor x moving average of seconds per record x records of the task")
	fs.IntVar(&o.queue.MaxTimeouts, "task-timeout-max", taskqueue.DefaultMaxTimeouts, "a task that times out or fails more often than this in a pass is discarded for the pass")
	fs.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.ttl < 2 {
		return o, fmt.Errorf("-ttl must be at least 2 seconds (etcd's minimum lease), not %d", o.ttl)
	}
	return o, nil
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
	log, err := newLogger(o.logLevel, stderr)
	if err != nil {
		return err
	}
	scfg := master.Config{ChunksPerTask: o.chunksPerTask, Queue: o.queue}
	if _, err := master.New(scfg); err != nil {
		return err // bad queue flags fail before anything starts
	}
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
	log.WithField("endpoints", o.etcd.Endpoints).Info("connected to etcd")
	return leader.Run(ctx, leader.Config{
		Client: cli, Namespace: o.namespace, TTL: o.ttl, Addr: o.addr, Advertise: o.advertise,
		Service: scfg, Log: log,
	})
}
