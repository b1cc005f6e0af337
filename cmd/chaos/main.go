// Command chaos is the fault-injection run: a 3-member etcd cluster, 3
// masters and 8 trainers, all separate processes on loopback, train for
// several passes over a generated dataset while a seeded schedule kills and
// stops them. At the end it checks, from what the trainers consumed and from
// etcd's history of the queues, that no record was lost, that every task
// became Done exactly once per pass, and that the pass never went back; it
// prints a table of the faults and figures.
//
//	chaos -bin DIR [-seed N] [-intensity X] [-records N] [-passes N]
//
// DIR holds the master, trainer and etcd-embed binaries (make build).
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
)

type options struct {
	bin           string
	dir           string
	seed          int64
	intensity     float64
	records       int
	files         int
	passes        int
	trainers      int
	chunkTask     int
	recordDelay   time.Duration
	slow          float64       // trainer 0 spends this many times recordDelay on a record
	progress      time.Duration // the trainers' -progress-interval
	stragglers    string        // the masters' -stragglers
	timeoutFactor float64       // the masters' -task-timeout-factor
	limit         time.Duration
	keep          bool
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	self, _ := os.Executable()
	fs := flag.NewFlagSetWithEnvPrefix("chaos", "CHAOS", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.bin, "bin", filepath.Dir(self), "`directory` of the master, trainer and etcd-embed binaries")
	fs.Int64Var(&o.seed, "seed", 1, "seed of the fault schedule")
	fs.Float64Var(&o.intensity, "intensity", 1, "faults per 3 seconds, on average")
	fs.IntVar(&o.records, "records", 100000, "records in the generated dataset")
	fs.IntVar(&o.files, "files", 10, "files in the generated dataset")
	fs.IntVar(&o.passes, "passes", 3, "passes over the dataset")
	fs.IntVar(&o.trainers, "trainers", 8, "trainer processes")
	fs.IntVar(&o.chunkTask, "chunks-per-task", 4, "chunks per task")
	fs.DurationVar(&o.recordDelay, "record-delay", time.Millisecond, "time each trainer spends on a record: sets how long the run lasts")
	fs.Float64Var(&o.slow, "slow", 10, "trainer 0 is this many times slower than the others (1: none)")
	fs.Float64Var(&o.timeoutFactor, "task-timeout-factor", 3, "the masters' -task-timeout-factor: raise it (to 20, say) so that the slow trainer's tasks are relieved by -stragglers rather than time out")
	fs.StringVar(&o.stragglers, "stragglers", "split", "the masters' -stragglers: what an idle trainer gets at the end of a pass (off, split or backup)")
	fs.DurationVar(&o.progress, "progress-interval", time.Second, "the trainers report progress inside a task this often (negative: never)")
	fs.DurationVar(&o.limit, "limit", 15*time.Minute, "fail if training has not finished by then")
	fs.BoolVar(&o.keep, "keep", false, "keep the working directory (logs, data)")
	if err := fs.Parse(args); err != nil {
		return o, err
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
		var dir string
		if dir, err = os.MkdirTemp("", "chaos-"); err == nil {
			o.dir = dir
			var r *report
			r, err = run(ctx, o, os.Stdout)
			if r != nil {
				r.print(os.Stdout)
				if err == nil {
					err = r.verdict()
				}
			}
			if o.keep || err != nil {
				fmt.Printf("working directory kept: %s\n", dir)
			} else {
				os.RemoveAll(dir)
			}
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "chaos: %v\n", err)
		os.Exit(1)
	}
}
