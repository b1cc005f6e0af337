package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"time"

	"github.com/pkg/errors"

	"github.com/trainmaster/master/internal/proc"
)

// crew runs the trainers of the run: independent trainers, each replaced
// when killed, or the ranks of one group, restarted together (group.go).
type crew interface {
	fmt.Stringer // for the run's first line
	start() error
	// killTrainer is the fault "kill -9 trainer", and what follows it.
	killTrainer(ctx context.Context, rng *rand.Rand) error
	// poll says whether training is over; the run calls it every 100 ms.
	poll() (done bool, err error)
	// model returns the traces that hold what the final model was
	// trained on (nil: no model is rebuilt).
	model() ([]segment, error)
}

// segment is a part of a model's history: the records of the traces up
// to the line of checkpoint until (0: to their end).
type segment struct {
	incarnation int
	traces      []string
	until       int64
}

func newCrew(c *cluster) crew {
	if c.o.independent {
		return independent{c}
	}
	return newGroup(c)
}

// independent trainers: a killed one is replaced by a new process of
// another name; trainer 0 is -slow times slower and reports the dataset.
type independent struct{ c *cluster }

func (d independent) String() string { return fmt.Sprintf("%d trainers", d.c.o.trainers) }

func (d independent) start() error {
	for i := range d.c.o.trainers {
		if err := d.c.startTrainer(i, i == 0); err != nil {
			return err
		}
	}
	return nil
}

func (d independent) killTrainer(ctx context.Context, rng *rand.Rand) error {
	i, ok := d.c.killRandomTrainer(ctx, rng)
	if !ok {
		return nil
	}
	return d.c.startTrainer(i, false)
}

func (d independent) poll() (bool, error) { return d.c.trainingDone() }

func (d independent) model() ([]segment, error) { return nil, nil }

// trainerArgs are the flags every trainer process gets: etcd, -json (the
// per-task lines the report checks), its name and its trace.
func (c *cluster) trainerArgs(name string, delay time.Duration) []string {
	return []string{"-endpoints", strings.Join(c.endpoints(), ","), "-json", "-record-delay", delay.String(),
		"-etcd-dial-timeout", "60s", "-name", name, "-trace", c.tracePath(name),
		"-progress-interval", c.o.progress.String()}
}

func (c *cluster) tracePath(name string) string { return filepath.Join(c.o.dir, "trace-"+name) }

// setTrainer puts p, called name, at index i.
func (c *cluster) setTrainer(i int, p *proc.Proc, name string) {
	if i < len(c.trainers) {
		c.trainers[i], c.names[i] = p, name
	} else {
		c.trainers, c.names = append(c.trainers, p), append(c.names, name)
	}
}

func (c *cluster) startTrainer(i int, report bool) error {
	delay := c.o.recordDelay
	if i == 0 && c.o.trainers > 1 && c.o.slow > 1 {
		delay = time.Duration(float64(delay) * c.o.slow)
	}
	c.starts++
	name := fmt.Sprintf("trainer-%d.%d", i, c.starts) // a new process is a new trainer: never the name of one killed
	args := c.trainerArgs(name, delay)
	if report {
		args = append(args, "-dataset", c.pattern)
	}
	p, err := proc.Start(c.o.dir, filepath.Join(c.o.bin, "trainer"), fmt.Sprintf("trainer-%d", i), args, c.rep.trainerLine, nil)
	if p != nil {
		c.setTrainer(i, p, name)
	}
	return err
}

// killRandomTrainer kills a random trainer with SIGKILL, unless it has
// exited, and tells the report (the fault, and the tasks it held); it
// returns the trainer's index and whether it killed it.
func (c *cluster) killRandomTrainer(ctx context.Context, rng *rand.Rand) (int, bool) {
	i := rng.IntN(len(c.trainers))
	if c.trainers[i].Exited() {
		return i, false
	}
	c.trainers[i].Kill()
	c.rep.trainerKilled(c.names[i])
	c.watchHeld(ctx, "kill -9 trainer", c.names[i])
	c.rep.fault("kill -9 trainer")
	return i, true
}

// trainingDone reports whether every trainer has exited by itself.
func (c *cluster) trainingDone() (bool, error) {
	for _, t := range c.trainers {
		if !t.Exited() {
			return false, nil
		}
		if err := t.Err(); err != nil {
			return true, errors.Errorf("%s exited: %v (log in %s)", t.Name, err, t.Log)
		}
	}
	return true, nil
}
