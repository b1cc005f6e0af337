// Command chaos is the fault-injection run: a 3-member etcd cluster, 3
// masters and 8 trainers, all separate processes on loopback, train for
// several passes over a generated dataset while a seeded schedule kills and
// stops them.
//
// By default the trainers are the ranks of one group (synchronous
// data-parallel training: cmd/trainer -ranks N -rank R) taking a data
// checkpoint every few batches. A kill -9 of a rank, or a rank exiting
// with an error (a checkpoint refused incomplete), ends the group: like an
// elastic launcher, the run kills the other ranks and restarts every rank
// from the newest checkpoint all of them recorded (-resume, a new
// -restart). At the end it rebuilds the history of the final model from
// the ranks' traces (the last incarnation's in full, each earlier one on
// the chain of resumes cut at the checkpoint the next resumed from) and
// checks that it holds every record of every pass exactly once.
//
// With -independent the trainers are independent (a killed one is
// replaced by a new process) and the run checks, from what the trainers
// consumed and from etcd's history of the queues, that no record was
// lost, that every task became Done exactly once per pass, and that the
// pass never went back. Both print a table of the faults and figures.
//
//	chaos -bin DIR [-independent] [-seed N] [-intensity X] [-records N] [-passes N]
//
// DIR holds the master, trainer and etcd-embed binaries (make build).
// doc/reliability.md says what each mode counts.
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

	// Group mode (the default) and -independent.
	independent     bool
	batch           int           // the ranks' -batch
	checkpointEvery int           // the ranks' -checkpoint-every, in batches
	checkpointWait  time.Duration // the masters' -checkpoint-wait
	checkpointsKept int           // the masters' -checkpoints-kept
}

const usage = `Usage: chaos -bin DIR [flags]

The fault-injection run: 3 etcd members, 3 masters and -trainers trainers,
separate processes on loopback, train -passes passes over a generated
dataset while a seeded schedule kills and stops them (-intensity faults per
3 s): kill -9 and SIGSTOP of the leading master, network cuts between it
and etcd, kill -9 of one etcd member or of all, kill -9 of a trainer.

Group mode (the default): the trainers are the ranks of one group, taking
a data checkpoint every -checkpoint-every batches. A rank killed, or
exiting with an error (a checkpoint refused after the masters'
-checkpoint-wait), ends the group: every rank is killed and restarted
from the newest checkpoint all of them recorded (-resume, a new -restart).
The run fails unless the final model's history, rebuilt from the ranks'
traces along the chain of resumes, holds every record of every pass
exactly once.

-independent: the trainers are independent, a killed one is replaced; the
run fails if a record was never trained, a task was Done in etcd other
than once per pass, or the pass went back.

Flags:
`

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	self, _ := os.Executable()
	fs := flag.NewFlagSetWithEnvPrefix("chaos", "CHAOS", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	fs.StringVar(&o.bin, "bin", filepath.Dir(self), "`directory` of the master, trainer and etcd-embed binaries")
	fs.Int64Var(&o.seed, "seed", 1, "seed of the fault schedule")
	fs.Float64Var(&o.intensity, "intensity", 1, "faults per 3 seconds, on average")
	fs.IntVar(&o.records, "records", 100000, "records in the generated dataset")
	fs.IntVar(&o.files, "files", 10, "files in the generated dataset")
	fs.IntVar(&o.passes, "passes", 3, "passes over the dataset")
	fs.IntVar(&o.trainers, "trainers", 8, "trainer processes: the ranks of the group, or independent trainers")
	fs.IntVar(&o.chunkTask, "chunks-per-task", 4, "chunks per task")
	fs.DurationVar(&o.recordDelay, "record-delay", time.Millisecond, "time each trainer spends on a record: sets how long the run lasts")
	fs.Float64Var(&o.slow, "slow", 10, "with -independent, trainer 0 is this many times slower than the others (1: none); a group's ranks all train at -record-delay")
	fs.Float64Var(&o.timeoutFactor, "task-timeout-factor", 3, "the masters' -task-timeout-factor: raise it (to 20, say) so that the slow trainer's tasks are relieved by -stragglers rather than time out")
	fs.StringVar(&o.stragglers, "stragglers", "split", "the masters' -stragglers: what an idle trainer gets at the end of a pass (off, split or backup)")
	fs.DurationVar(&o.progress, "progress-interval", time.Second, "the trainers report progress inside a task this often (negative: never)")
	fs.DurationVar(&o.limit, "limit", 15*time.Minute, "fail if training has not finished by then")
	fs.BoolVar(&o.keep, "keep", false, "keep the working directory (logs, data, traces)")
	fs.BoolVar(&o.independent, "independent", false, "run independent trainers, each replaced when killed, instead of the ranks of one group restarted together from their newest common checkpoint")
	fs.IntVar(&o.batch, "batch", 32, "group mode: records in a rank's batch")
	fs.IntVar(&o.checkpointEvery, "checkpoint-every", 4, "group mode: the ranks take a data checkpoint every N batches")
	fs.DurationVar(&o.checkpointWait, "checkpoint-wait", 15*time.Second, "the masters' -checkpoint-wait: a checkpoint whose ranks do not all report within it is refused, and the group restarts")
	fs.IntVar(&o.checkpointsKept, "checkpoints-kept", 5, "the masters' -checkpoints-kept")
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
