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

// runTrainers runs synthetic trainers, each on its own connection made by
// dial: every call finishes the trainer's previous task and asks for the
// next. Named trainers send the name bench-<i> on every task they send, as
// go/client does; the others send none, as a trainer may. With progress,
// each trainer reports one record of every task trained before it asks
// for the next (Master.TaskProgress: a fenced write each).
func runTrainers(ctx context.Context, dial func(string) (*rpc.Client, error), addr string, trainers int, named, progress bool, w window) (loadResult, error) {
	conns := make([]*rpc.Client, trainers)
	prev := make([]wire.Task, trainers)
	names := make([]string, trainers)
	if named {
		for i := range names {
			names[i] = fmt.Sprintf("bench-%d", i)
		}
	}
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}()
	for i := range conns {
		c, err := dial(addr)
		if err != nil {
			return loadResult{}, errors.Wrap(err, "dial the master")
		}
		conns[i] = c
	}
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
		return true, nil
	})
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
