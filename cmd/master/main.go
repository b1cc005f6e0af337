// Command master is the master process of elastic distributed training: it
// accepts the dataset trainers report, hands out tasks over net/rpc and takes
// them back when a trainer fails or stalls.
//
// Every flag can also be set from the environment as MASTER_<FLAG> (dashes
// become underscores, e.g. MASTER_TASK_TIMEOUT=5m) or from a file named by
// -config holding "flag value" lines.
package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/namsral/flag"
	"github.com/sirupsen/logrus"

	"github.com/trainmaster/master/go/master"
	"github.com/trainmaster/master/go/taskqueue"
)

type options struct {
	addr          string
	chunksPerTask int
	queue         taskqueue.Config
	logLevel      string
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSetWithEnvPrefix("master", "MASTER", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.String(flag.DefaultConfigFlagname, "", "read flags from this `file` (lines of: flag value)")
	fs.StringVar(&o.addr, "addr", ":8080", "listen `address` for trainers (net/rpc over TCP)")
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
	return o, nil
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "master: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		if err == flag.ErrHelp {
			return nil
		}
		return err
	}
	log := logrus.New()
	log.SetOutput(stderr)
	level, err := logrus.ParseLevel(o.logLevel)
	if err != nil {
		return err
	}
	log.SetLevel(level)

	svc, err := master.New(master.Config{ChunksPerTask: o.chunksPerTask, Queue: o.queue, Log: log})
	if err != nil {
		return err
	}
	defer svc.Close()
	srv, err := master.NewServer(svc, log)
	if err != nil {
		return err
	}
	lis, err := net.Listen("tcp", o.addr)
	if err != nil {
		return err
	}
	log.WithField("addr", lis.Addr().String()).Info("serving trainers")
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	select {
	case <-ctx.Done():
		log.Info("signal received; shutting down")
		start := time.Now()
		srv.Close()
		log.WithField("took", time.Since(start).Round(time.Millisecond)).Info("stopped")
		return <-served
	case err := <-served:
		return err
	}
}
