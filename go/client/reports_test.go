package client_test

import (
	"context"
	"errors"
	"testing"

	"github.com/trainmaster/master/go/client"
	"github.com/trainmaster/master/go/client/clienttest"
	"github.com/trainmaster/master/go/wire"
)

// TestReportsCarryNoBlocks: the tasks a program hands back to GetTask,
// TaskFinished and TaskFailed travel without their blocks (the master
// ignores them, and they would make every request as large as the task),
// with Index, Epoch, Pass and the failure's reason intact.
func TestReportsCarryNoBlocks(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		method string
		report func(c *client.Client, task wire.Task) error
	}{
		{"GetTask", func(c *client.Client, task wire.Task) error {
			_, err := c.GetTask(ctx, task)
			return err
		}},
		{"TaskFinished", func(c *client.Client, task wire.Task) error {
			_, err := c.TaskFinished(ctx, task)
			return err
		}},
		{"TaskFailed", func(c *client.Client, task wire.Task) error {
			_, err := c.TaskFailed(ctx, task, errors.New("disk on fire"))
			return err
		}},
	} {
		t.Run(tc.method, func(t *testing.T) {
			h := setup(t, clienttest.Options{ChunksPerTask: 3}, small, fast)
			task, err := h.c.GetTask(ctx, wire.Task{})
			if err != nil || len(task.Blocks) != 3 {
				t.Fatalf("GetTask: %+v, %v", task, err)
			}
			if err := tc.report(h.c, task); err != nil {
				t.Fatal(err)
			}
			events := h.m.Events()
			e := events[len(events)-1]
			if e.Method != tc.method || e.ArgBlocks != 0 {
				t.Fatalf("%s sent %d blocks back (event %+v), want none", tc.method, e.ArgBlocks, e)
			}
			if e.Arg.Index != task.Index || e.Arg.Epoch != task.Epoch || e.Arg.Pass != task.Pass {
				t.Fatalf("%s sent %+v for task %+v", tc.method, e.Arg, task)
			}
			if wantErr := map[bool]string{true: "disk on fire"}[tc.method == "TaskFailed"]; e.Arg.Error != wantErr {
				t.Fatalf("%s sent the reason %q, want %q", tc.method, e.Arg.Error, wantErr)
			}
		})
	}
}
