package main

import (
	"context"
	"fmt"

	"github.com/namsral/flag"
	"github.com/pkg/errors"

	"github.com/trainmaster/master/go/client"
	"github.com/trainmaster/master/go/wire"
)

// A rank of a group and data checkpoints. With -ranks the trainer is rank
// -rank of a group of -ranks ranks forming batches of -batch records: the
// master hands it its share of each pass (wire's group.go). With
// -checkpoint-every N it takes a data checkpoint every N records, or in a
// group every N of its batches (the same step on every rank: every rank
// forms the same number of batches in a pass), named "RESTART-K", the
// K-th of this run, by -ranks trainers together: the call returns once
// every rank took it, so it is the group's barrier. Each checkpoint
// stored is printed, and written to the -trace file as a line
// "checkpoint ID". With -resume ID the trainer first rewinds the master to
// checkpoint ID for the restart -restart (every rank of the restart gives
// the same), as a job restarted from the model saved with it does.

func (g *groupOptions) register(fs *flag.FlagSet) {
	fs.IntVar(&g.rank, "rank", 0, "this trainer's `rank` in its group (with -ranks)")
	fs.IntVar(&g.ranks, "ranks", 0, "train as a rank of a group of this many `ranks` stepping together: the master hands each its share of every pass (0: no group)")
	fs.IntVar(&g.batch, "batch", 32, "`records` in a batch of a rank of a group")
	fs.IntVar(&g.checkpointEvery, "checkpoint-every", 0, "take a data checkpoint every `N` records, or in a group every N batches, with the other ranks (0: never)")
	fs.Int64Var(&g.resume, "resume", 0, "before training, rewind the master to the data checkpoint of this `ID` (with -restart)")
	fs.StringVar(&g.restart, "restart", "start", "`name` of this run's restart: its checkpoints are named NAME-K, and -resume rewinds once for it")
}

func (g groupOptions) check() error {
	switch {
	case g.ranks < 0 || g.ranks > wire.MaxRanks || (g.ranks > 0 && (g.rank < 0 || g.rank >= g.ranks)):
		return errors.Errorf("-rank %d of -ranks %d (want 0 <= rank < ranks <= %d)", g.rank, g.ranks, wire.MaxRanks)
	case g.ranks > 0 && (g.batch < 1 || g.batch > wire.MaxBatchSize):
		return errors.Errorf("-batch %d (want 1 to %d)", g.batch, wire.MaxBatchSize)
	case g.checkpointEvery < 0 || g.resume < 0:
		return errors.Errorf("-checkpoint-every %d, -resume %d (want 0 or more)", g.checkpointEvery, g.resume)
	case g.restart == "" || len(g.restart) > wire.MaxCheckpointNameBytes-12:
		return errors.Errorf("-restart of %d bytes (want 1 to %d)", len(g.restart), wire.MaxCheckpointNameBytes-12)
	}
	return nil
}

// checkpointer takes the checkpoints of -checkpoint-every as the records
// are trained.
type checkpointer struct {
	c     *client.Client
	g     groupOptions
	out   func(id int64, name string) error // prints a checkpoint stored
	taken int                               // checkpoints of this run

	count int   // records, or in a group batches, since the last checkpoint
	pass  int   // the pass of the plan below; -1: none
	sizes []int // the rank's batch sizes in pass
	batch int   // the batch being formed
	in    int   // its records so far
}

func newCheckpointer(c *client.Client, g groupOptions, out func(int64, string) error) *checkpointer {
	return &checkpointer{c: c, g: g, out: out, pass: -1}
}

// trained counts rec, trained, and takes a checkpoint when one is due.
func (k *checkpointer) trained(ctx context.Context, rec client.Record) error {
	if k.g.checkpointEvery == 0 || !k.step(rec) {
		return nil
	}
	if k.count++; k.count < k.g.checkpointEvery {
		return nil
	}
	k.count = 0
	k.taken++
	name := fmt.Sprintf("%s-%d", k.g.restart, k.taken)
	reply, err := k.c.Checkpoint(ctx, name, max(k.g.ranks, 1), false)
	if err != nil {
		return errors.WithMessagef(err, "checkpoint %s", name)
	}
	return k.out(reply.ID, name)
}

// step reports whether rec ends a step: any record outside a group, the
// last record of one of the rank's batches in a group.
func (k *checkpointer) step(rec client.Record) bool {
	if k.g.ranks == 0 {
		return true
	}
	if rec.Pass != k.pass {
		k.pass, k.batch, k.in = rec.Pass, 0, 0
		k.sizes = wire.BatchSizes(rec.RankRecords, rec.RankBatches, k.g.batch)
	}
	if k.batch >= len(k.sizes) {
		return false // past the plan: a task that failed for good changed the pass
	}
	if k.in++; k.in < k.sizes[k.batch] {
		return false
	}
	k.batch, k.in = k.batch+1, 0
	return true
}
