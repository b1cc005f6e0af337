package masterbench

import (
	"context"
	"math/rand/v2"

	"github.com/sirupsen/logrus"
)

// The rows of a run: one window per number of trainers, or four in a
// symmetric order that compares two setups of the master (its side door,
// or the trainers' checkpoints) while the machine drifts.

// DoorCost is what the side door leaves of the master's rate at one number
// of trainers: the sum of the figure over the windows with the door over
// its sum over the windows without.
type DoorCost struct {
	Trainers int `json:"trainers"`
	// Order is the door in each of the four windows, in the order they
	// ran: "off", "on", "on", "off" or "on", "off", "off", "on".
	Order       []string `json:"order"`
	TasksPerSec float64  `json:"tasks_per_sec"` // of the door's windows over the others'
	// Ratio compares the ratios to the bare rate, each window's own:
	// the cost net of the disk's changes between windows.
	Ratio float64 `json:"ratio"`
}

// doorOrder returns the order of a row's four windows: off, on, on, off,
// or on, off, off, on when doorFirst.
func doorOrder(jobs []*job, doorFirst bool) []*job {
	off, on := jobs[0], jobs[1]
	if doorFirst {
		off, on = on, off
	}
	return []*job{off, on, on, off}
}

// doorCost compares the windows of rows that with says are with the
// thing measured (the door, checkpoints) to those without.
func doorCost(trainers int, rows []Result, with func(Result) bool) DoorCost {
	c := DoorCost{Trainers: trainers}
	var tasks, ratio [2]float64 // without, with
	for _, r := range rows {
		c.Order = append(c.Order, onOff(with(r)))
		i := 0
		if with(r) {
			i = 1
		}
		tasks[i] += r.TasksPerSec
		ratio[i] += r.Ratio
	}
	if tasks[0] > 0 {
		c.TasksPerSec = tasks[1] / tasks[0]
	}
	if ratio[0] > 0 {
		c.Ratio = ratio[1] / ratio[0]
	}
	return c
}

// runRow runs the windows of one number of trainers: one a job, or four
// in a symmetric order with both door modes or, with CheckpointCompare,
// with and without checkpoints.
func runRow(ctx context.Context, cfg Config, jobs []*job, trainers int) ([]Result, error) {
	type win struct {
		j           *job
		checkpoints bool
	}
	var order []win
	switch {
	case len(jobs) == 2:
		for _, j := range doorOrder(jobs, rand.IntN(2) == 1) {
			order = append(order, win{j, cfg.CheckpointEvery > 0})
		}
	case cfg.CheckpointCompare:
		on := rand.IntN(2) == 1
		for _, c := range []bool{on, !on, !on, on} {
			order = append(order, win{jobs[0], c})
		}
	default:
		order = []win{{jobs[0], cfg.CheckpointEvery > 0}}
	}
	var rows []Result
	for _, w := range order {
		r, err := runWindow(ctx, cfg, w.j, trainers, w.checkpoints)
		if err != nil {
			return rows, err
		}
		cfg.Log.WithFields(logrus.Fields{"trainers": trainers, "door": r.Door, "checkpoints": r.Checkpoints, "tasks_per_sec": int(r.TasksPerSec),
			"bare_txns_per_sec": int(r.BareTxnsPerSec)}).Info("window measured")
		rows = append(rows, r)
	}
	return rows, nil
}
