package masterbench

import (
	"context"
	"fmt"
	"net/rpc"
	"net/rpc/jsonrpc"
	"time"

	"github.com/pkg/errors"

	"github.com/trainmaster/master/go/wire"
)

// reportDataset reports the dataset as a trainer would.
func reportDataset(ctx context.Context, addr, pattern string) error {
	c, err := rpc.Dial("tcp", addr)
	if err != nil {
		return errors.Wrap(err, "dial the master")
	}
	defer c.Close()
	var reply int
	call := c.Go(wire.ServiceName+".ReportDataset", []string{pattern}, &reply, nil)
	select {
	case <-call.Done:
		return errors.Wrapf(call.Error, "report dataset %s", pattern)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// dialer connects to the master in codec: gob or JSON-RPC.
func dialer(codec string) func(addr string) (*rpc.Client, error) {
	if codec == "json" {
		return func(addr string) (*rpc.Client, error) { return jsonrpc.Dial("tcp", addr) }
	}
	return func(addr string) (*rpc.Client, error) { return rpc.Dial("tcp", addr) }
}

// trainerConns are synthetic trainers' connections to the master, one
// each; trainer i is named bench-<i>.
type trainerConns struct {
	conns []*rpc.Client
	names []string
}

// dialTrainers connects n trainers to addr, one after the other. If a dial
// fails, it closes the connections it made and returns failed(i, err) for
// trainer i.
func dialTrainers(dial func(string) (*rpc.Client, error), addr string, n int, failed func(i int, err error) error) (trainerConns, error) {
	t := trainerConns{conns: make([]*rpc.Client, 0, n), names: make([]string, n)}
	for i := range n {
		t.names[i] = fmt.Sprintf("bench-%d", i)
		c, err := dial(addr)
		if err != nil {
			t.close()
			return trainerConns{}, failed(i, err)
		}
		t.conns = append(t.conns, c)
	}
	return t, nil
}

// close closes every trainer's connection.
func (t trainerConns) close() {
	for _, c := range t.conns {
		c.Close()
	}
}

// load is what the synthetic trainers do besides taking tasks.
type load struct {
	named           bool // send the name bench-<i>
	progress        bool // report progress once in every task
	checkpointEvery int  // take a checkpoint of their own every that many tasks; 0: never
}

// runTrainers runs synthetic trainers, each on its own connection made by
// dial: every call finishes the trainer's previous task and asks for the
// next. Named trainers send the name bench-<i> on every task they send, as
// go/client does; the others send none, as a trainer may. With progress,
// each trainer reports one record of every task trained before it asks
// for the next (Master.TaskProgress: a fenced write each). With
// checkpointEvery, each takes a checkpoint of its own (one trainer) every
// that many tasks, holding the task it trains, before it asks for the
// next: a fenced write of the dataset's Trained each.
func runTrainers(ctx context.Context, dial func(string) (*rpc.Client, error), addr string, trainers int, l load, w window) (loadResult, error) {
	progress := l.progress
	tc, err := dialTrainers(dial, addr, trainers, func(_ int, err error) error { return errors.Wrap(err, "dial the master") })
	if err != nil {
		return loadResult{}, err
	}
	defer tc.close()
	conns, names := tc.conns, tc.names
	if !l.named {
		names = make([]string, trainers)
	}
	prev := make([]wire.Task, trainers)
	taken := make([]int, trainers) // tasks taken, for checkpointEvery
	var cpLatency latencyList
	res, err := runLoad(ctx, trainers, w, func(i int) (bool, error) {
		var next wire.Task
		prev[i].Trainer = names[i]
		err := conns[i].Call(wire.ServiceName+".GetTask", prev[i], &next)
		prev[i] = next // the zero task after an error: the finish was recorded
		switch {
		case wire.Is(err, wire.TextNoTask):
			time.Sleep(time.Millisecond) // as a trainer backs off
			return false, nil
		case err != nil:
			return false, errors.Wrap(err, "GetTask")
		}
		if progress {
			var reply wire.ProgressReply
			p := wire.Progress{Index: next.Index, Epoch: next.Epoch, Pass: next.Pass, Trainer: names[i], Done: 1}
			if err := conns[i].Call(wire.ServiceName+".TaskProgress", p, &reply); err != nil {
				return false, errors.Wrap(err, "TaskProgress")
			}
		}
		if taken[i]++; l.checkpointEvery > 0 && taken[i]%l.checkpointEvery == 0 {
			cp := wire.Checkpoint{Name: fmt.Sprintf("%s-%d", names[i], taken[i]), Trainer: names[i], Trainers: 1,
				Held: []wire.Held{{Index: next.Index, Epoch: next.Epoch, Pass: next.Pass, Gen: next.Gen, Done: 1}}}
			var reply wire.CheckpointReply
			began := time.Now()
			if err := conns[i].Call(wire.ServiceName+".Checkpoint", cp, &reply); err != nil {
				return false, errors.Wrap(err, "Checkpoint")
			}
			cpLatency.add(time.Since(began))
		}
		return true, nil
	})
	res.Checkpoints = cpLatency.all()
	if err != nil {
		return res, err
	}
	// A task left pending would hold up every later pass until it timed out.
	for i, t := range prev {
		if t.Epoch == 0 {
			continue
		}
		var report int
		t.Trainer = names[i]
		if err := conns[i].Call(wire.ServiceName+".TaskFinished", t, &report); err != nil {
			return res, errors.Wrapf(err, "finish task %d", t.Index)
		}
	}
	return res, nil
}
