package masterbench

import (
	"context"
	"net/rpc"
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

// runTrainers runs synthetic trainers, each on its own connection: every
// call finishes the trainer's previous task and asks for the next.
func runTrainers(ctx context.Context, addr string, trainers int, w window) (loadResult, error) {
	conns := make([]*rpc.Client, trainers)
	prev := make([]wire.Task, trainers)
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}()
	for i := range conns {
		c, err := rpc.Dial("tcp", addr)
		if err != nil {
			return loadResult{}, errors.Wrap(err, "dial the master")
		}
		conns[i] = c
	}
	res, err := runLoad(ctx, trainers, w, func(i int) (bool, error) {
		var next wire.Task
		err := conns[i].Call(wire.ServiceName+".GetTask", prev[i], &next)
		prev[i] = next // the zero task after an error: the finish was recorded
		switch {
		case wire.Is(err, wire.TextNoTask):
			time.Sleep(time.Millisecond) // as a trainer backs off
			return false, nil
		case err != nil:
			return false, errors.Wrap(err, "GetTask")
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
		if err := conns[i].Call(wire.ServiceName+".TaskFinished", t, &report); err != nil {
			return res, errors.Wrapf(err, "finish task %d", t.Index)
		}
	}
	return res, nil
}
