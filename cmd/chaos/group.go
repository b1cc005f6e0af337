package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pkg/errors"

	"github.com/trainmaster/master/go/client"
	"github.com/trainmaster/master/go/discovery"
	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/proc"
)

// group runs the trainers as the ranks of one group, as an elastic
// launcher does: a rank killed, or exiting with an error, ends the group;
// every other rank is killed, and the next incarnation of the group
// starts, every rank resuming from the newest checkpoint all ranks of the
// incarnation recorded in their traces (-resume, -restart r<n>).
//
// Before the first incarnation the launcher reports the dataset and takes
// a pinned checkpoint, origin, as a job saves its initial model: an
// incarnation that recorded no checkpoint, and resumed from none,
// restarts from origin, from scratch. Without it such a restart would
// start where the master is: with the dead ranks' dispatches pending
// (a rank's have no deadline; they wait for the trainers' grace, which
// every failover restarts), and with what the dead ranks trained done
// though no model holds it.
type group struct {
	c      *cluster
	mu     sync.Mutex // guards the incarnations' exits
	incs   []*incarnation
	origin int64 // the checkpoint taken before the first incarnation
	// failing counts the incarnations in a row that ended by a rank's
	// error without recording a checkpoint: the run gives up at
	// maxFailing, rather than restart a broken group until -limit.
	failing int
}

// maxFailing is how many incarnations in a row may end by a rank's error
// without recording a checkpoint.
const maxFailing = 8

// maxCandidates bounds the checkpoints an incarnation keeps to fall back
// to: the masters keep -checkpoints-kept, the newest.
const maxCandidates = 16

// incarnation is one start of the group: its ranks r<n>.
type incarnation struct {
	n        int
	resume   int64    // the checkpoint it resumed from; 0: none (the first)
	fallback []int64  // checkpoints to resume from instead if resume is not kept, newest first
	names    []string // its ranks' names
	exits    []string // each rank's last "trainer: " line on stderr: why it exited
	recorded []int64  // the checkpoints every rank recorded, oldest first (set at its end)
}

func newGroup(c *cluster) *group { return &group{c: c} }

func (g *group) String() string {
	return fmt.Sprintf("a group of %d ranks (batch %d, a checkpoint every %d batches)", g.c.o.trainers, g.c.o.batch, g.c.o.checkpointEvery)
}

func (g *group) start() error {
	id, err := g.startCheckpoint()
	if err != nil {
		return err
	}
	g.origin = id
	return g.launch(nil)
}

// startCheckpoint reports the dataset and takes the checkpoint origin,
// pinned (kept past -checkpoints-kept), with nothing trained.
func (g *group) startCheckpoint() (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl := client.New(discovery.NewResolver(g.c.cli, ""), client.Config{Name: "launcher"})
	defer cl.Close()
	if err := cl.ReportDataset(ctx, []string{g.c.pattern}); err != nil {
		return 0, errors.WithMessage(err, "launcher: report the dataset")
	}
	reply, err := cl.Checkpoint(ctx, "start", 1, true)
	if err != nil {
		return 0, errors.WithMessage(err, "launcher: take the start checkpoint")
	}
	return reply.ID, nil
}

// cur is the incarnation running.
func (g *group) cur() *incarnation { return g.incs[len(g.incs)-1] }

// launch starts the next incarnation, resuming from the first of
// candidates (none: without -resume), the others its fallbacks.
func (g *group) launch(candidates []int64) error {
	inc := &incarnation{n: len(g.incs), names: make([]string, g.c.o.trainers), exits: make([]string, g.c.o.trainers)}
	if len(candidates) > 0 {
		inc.resume, inc.fallback = candidates[0], candidates[1:]
	}
	g.incs = append(g.incs, inc)
	g.c.rep.launched(inc.resume, g.origin)
	for r := range g.c.o.trainers {
		if err := g.startRank(inc, r); err != nil {
			return err
		}
	}
	return nil
}

// startRank starts rank r of inc (the launcher reported the dataset).
func (g *group) startRank(inc *incarnation, r int) error {
	c := g.c
	name := fmt.Sprintf("rank-%d.r%d", r, inc.n)
	inc.names[r] = name
	args := append(c.trainerArgs(name, c.o.recordDelay), "-ranks", strconv.Itoa(c.o.trainers), "-rank", strconv.Itoa(r),
		"-batch", strconv.Itoa(c.o.batch), "-checkpoint-every", strconv.Itoa(c.o.checkpointEvery), "-restart", fmt.Sprintf("r%d", inc.n))
	if inc.resume > 0 {
		args = append(args, "-resume", strconv.FormatInt(inc.resume, 10))
	}
	c.starts++
	p, err := proc.Start(c.o.dir, filepath.Join(c.o.bin, "trainer"), fmt.Sprintf("rank-%d", r), args, c.rep.trainerLine, func(line string) {
		if strings.HasPrefix(line, "trainer: ") {
			g.mu.Lock()
			inc.exits[r] = line
			g.mu.Unlock()
		}
	})
	if p != nil {
		c.setTrainer(r, p, name)
	}
	return err
}

// killTrainer kills a random rank, which ends the group.
func (g *group) killTrainer(ctx context.Context, rng *rand.Rand) error {
	if _, ok := g.c.killRandomTrainer(ctx, rng); !ok {
		return nil
	}
	return g.restart("kill -9 of a rank", "")
}

// poll says whether every rank exited by itself; a rank that exited with
// an error restarts the group.
func (g *group) poll() (bool, error) {
	done := true
	for r, p := range g.c.trainers {
		if !p.Exited() {
			done = false
			continue
		}
		if err := p.Err(); err != nil {
			inc := g.cur()
			g.mu.Lock()
			why := inc.exits[r]
			g.mu.Unlock()
			if why == "" {
				why = err.Error()
			}
			g.c.rep.note(fmt.Sprintf("%s exited (%v): %s", inc.names[r], err, why))
			return false, g.restart("a rank exited: "+exitKind(why), why)
		}
	}
	return done, nil
}

// exitKind sorts a rank's error by the contract's text it carries.
func exitKind(why string) string {
	for _, text := range []string{wire.TextCheckpointIncomplete, wire.TextUnknownCheckpoint} {
		if strings.Contains(why, text) {
			return text
		}
	}
	return "other error"
}

// restart ends the incarnation running, for cause (why: the error of the
// rank that ended it, "" for a kill): every rank is killed, and the next
// incarnation resumes from the newest checkpoint every rank recorded,
// else from the checkpoint this one resumed from, else from its
// fallbacks, else from origin. A resume refused as not kept falls back
// to the next older.
func (g *group) restart(cause, why string) error {
	for _, p := range g.c.trainers {
		p.Kill()
	}
	inc := g.cur()
	recorded, err := commonCheckpoints(g.traces(inc))
	if err != nil {
		return err
	}
	inc.recorded = recorded
	unknown := exitKind(why) == wire.TextUnknownCheckpoint
	next := candidates(inc, unknown, g.origin)
	if unknown {
		g.c.rep.note(fmt.Sprintf("r%d: checkpoint %d not kept; r%d resumes from %s", inc.n, inc.resume, inc.n+1, describeResume(next)))
	}
	if why != "" && len(recorded) == 0 {
		g.failing++
	} else {
		g.failing = 0
	}
	if g.failing >= maxFailing {
		return errors.Errorf("%d incarnations of the group in a row ended by an error without a checkpoint, the last (r%d): %s", g.failing, inc.n, why)
	}
	g.c.rep.groupRestart(cause)
	return g.launch(next)
}

// candidates are the checkpoints the incarnation after inc may resume
// from, the first preferred: those every rank of inc recorded, newest
// first, then the one inc resumed from (unless it was not kept: unknown),
// then inc's fallbacks, at most maxCandidates of them, and origin last.
func candidates(inc *incarnation, unknown bool, origin int64) []int64 {
	next := slices.Clone(inc.recorded)
	slices.Reverse(next)
	if inc.resume > 0 && !unknown {
		next = append(next, inc.resume)
	}
	next = append(next, inc.fallback...)
	next = slices.DeleteFunc(next, func(id int64) bool { return id == origin })
	next = next[:min(len(next), maxCandidates)]
	if origin > 0 {
		next = append(next, origin)
	}
	return next
}

func describeResume(candidates []int64) string {
	if len(candidates) == 0 {
		return "no checkpoint"
	}
	return fmt.Sprintf("checkpoint %d", candidates[0])
}

// traces are the paths of inc's ranks' traces.
func (g *group) traces(inc *incarnation) []string {
	paths := make([]string, len(inc.names))
	for r, name := range inc.names {
		paths[r] = g.c.tracePath(name)
	}
	return paths
}

// model returns the final model's history: the last incarnation's traces
// in full, then, back along the chain of resumes, each incarnation that
// recorded the checkpoint the next one resumed from, cut there.
// Incarnations off the chain trained nothing the model holds.
func (g *group) model() ([]segment, error) {
	last := g.cur()
	segs := []segment{{incarnation: last.n, traces: g.traces(last)}}
	seen := map[int]bool{last.n: true}
	for id := last.resume; id > 0 && id != g.origin; {
		prev := g.recordedBy(id)
		if prev == nil || seen[prev.n] {
			return nil, errors.Errorf("no earlier incarnation recorded checkpoint %d, which r%d resumed from", id, segs[len(segs)-1].incarnation)
		}
		seen[prev.n] = true
		segs = append(segs, segment{incarnation: prev.n, traces: g.traces(prev), until: id})
		id = prev.resume
	}
	g.c.rep.chainOf(segs, len(g.incs))
	return segs, nil
}

// recordedBy is the incarnation whose ranks all recorded checkpoint id.
func (g *group) recordedBy(id int64) *incarnation {
	for _, inc := range g.incs {
		if slices.Contains(inc.recorded, id) {
			return inc
		}
	}
	return nil
}
