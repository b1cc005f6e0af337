// Command demo shows the master at work on one machine: it writes a sample
// dataset, starts a master and several trainers as separate processes, makes
// one trainer stall on a task and another fail one, prints live progress, and
// ends by checking that every record of every pass was consumed.
//
// It runs the master and trainer binaries found in -bin (by default the
// directory of the demo binary itself); `make demo` builds them all.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/namsral/flag"
	"github.com/pkg/errors"
)

type options struct {
	bin         string
	trainers    int
	passes      int
	files       int
	records     int
	chunkTask   int
	timeoutMin  time.Duration
	keep        bool
	progressInt time.Duration
	recordDelay time.Duration
	python      string // interpreter of the Python trainer; "" for none
	pythonDir   string // the folder holding the trainmaster package
	httpPort    int    // status page of master A; B's is the next port; 0: any free ports
}

// httpAddr is the -http-addr of master name ("A" or "B").
func (o options) httpAddr(name string) string {
	if o.httpPort == 0 {
		return "127.0.0.1:0"
	}
	return fmt.Sprintf("127.0.0.1:%d", o.httpPort+int(name[0]-'A'))
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	self, _ := os.Executable()
	fs := flag.NewFlagSetWithEnvPrefix("demo", "DEMO", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.bin, "bin", filepath.Dir(self), "`directory` holding the master and trainer binaries")
	fs.IntVar(&o.trainers, "trainers", 4, "trainer processes (one stalls, one fails a task)")
	fs.IntVar(&o.passes, "passes", 3, "passes over the dataset")
	fs.IntVar(&o.files, "files", 8, "RecordIO files in the sample dataset")
	fs.IntVar(&o.records, "records", 2000, "records per file")
	fs.IntVar(&o.chunkTask, "chunks-per-task", 4, "chunks per task")
	fs.DurationVar(&o.timeoutMin, "task-timeout-min", 2*time.Second, "the master's shortest task timeout: how soon the stalled task comes back")
	fs.DurationVar(&o.progressInt, "progress", time.Second, "interval between progress lines")
	fs.DurationVar(&o.recordDelay, "record-delay", 2*time.Millisecond, "time each trainer pretends to train on a record (the default makes a pass last a few seconds, time to open the status page)")
	fs.BoolVar(&o.keep, "keep", false, "keep the working directory (dataset and logs)")
	fs.StringVar(&o.python, "python", "/usr/bin/python3", "`interpreter` of one more trainer, in Python, when it and -python-dir exist (empty: none)")
	fs.StringVar(&o.pythonDir, "python-dir", "", "`directory` holding the trainmaster Python package (default: python/ beside -bin)")
	fs.IntVar(&o.httpPort, "http-port", 0, "loopback `port` of master A's status page and metrics, B's on the next one (0: any free ports; the demo prints them)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.pythonDir == "" {
		o.pythonDir = filepath.Join(o.bin, "..", "python")
	}
	if o.trainers < 3 {
		return o, errors.New("-trainers must be at least 3 (one stalls, one fails a task, one is well)")
	}
	return o, nil
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	o, err := parseFlags(os.Args[1:], os.Stderr)
	if err == flag.ErrHelp {
		return
	}
	if err == nil {
		err = run(ctx, o, os.Stdout)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		os.Exit(1)
	}
}
