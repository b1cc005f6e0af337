package client_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
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

// TestReportsCarryTheName: every task the client sends, the zero Task
// GetTask sends when it has no finish to report included, carries
// Config.Name as Trainer: "hostname-pid-xxxx" by default, a longer name cut to
// wire.MaxTrainerNameBytes at a UTF-8 boundary.
func TestReportsCarryTheName(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	long := "x" + strings.Repeat("é", wire.MaxTrainerNameBytes) // 2 bytes a rune: byte 128 is inside one
	ctx := context.Background()
	get := func(t *testing.T, c *client.Client) wire.Task {
		task, err := c.GetTask(ctx, wire.Task{})
		if err != nil {
			t.Fatal(err)
		}
		return task
	}
	for _, name := range []struct{ name, set, want string }{
		{"default", "", fmt.Sprintf("%s-%d-", host, os.Getpid())}, // and four hex digits
		{"set", "gpu7/worker 3", "gpu7/worker 3"},
		{"too long", long, long[:wire.MaxTrainerNameBytes-1]},
	} {
		for _, tc := range []struct {
			method string
			finish bool // the call reports a task (Epoch set)
			calls  func(t *testing.T, c *client.Client) error
		}{
			{"GetTask", false, func(t *testing.T, c *client.Client) error {
				_, err := c.GetTask(ctx, wire.Task{})
				return err
			}},
			{"GetTask", true, func(t *testing.T, c *client.Client) error {
				_, err := c.GetTask(ctx, get(t, c))
				return err
			}},
			{"TaskFinished", true, func(t *testing.T, c *client.Client) error {
				_, err := c.TaskFinished(ctx, get(t, c))
				return err
			}},
			{"TaskFailed", true, func(t *testing.T, c *client.Client) error {
				_, err := c.TaskFailed(ctx, get(t, c), errors.New("disk on fire"))
				return err
			}},
		} {
			t.Run(fmt.Sprintf("%s/%s/finished=%v", name.name, tc.method, tc.finish), func(t *testing.T) {
				cfg := fast
				cfg.Name = name.set
				h := setup(t, clienttest.Options{}, small, cfg)
				if err := tc.calls(t, h.c); err != nil {
					t.Fatal(err)
				}
				events := h.m.Events()
				if e := events[len(events)-1]; e.Method != tc.method || (e.Arg.Epoch != 0) != tc.finish {
					t.Fatalf("last call %s with %+v, want %s reporting a task: %v", e.Method, e.Arg, tc.method, tc.finish)
				}
				for _, e := range events[1:] { // after ReportDataset
					if got := e.Arg.Trainer; got != name.want && !(name.set == "" && strings.HasPrefix(got, name.want) && len(got) == len(name.want)+4) {
						t.Errorf("%s sent the name %q, want %q", e.Method, e.Arg.Trainer, name.want)
					}
				}
			})
		}
	}
}

// TestReportsCarryTheDataset: every task the client sends, the zero Task
// included, names Config.Dataset. (The fake master ignores the name and
// hands out its one dataset's tasks.)
func TestReportsCarryTheDataset(t *testing.T) {
	ctx := context.Background()
	cfg := fast
	cfg.Dataset = "eval"
	h := setup(t, clienttest.Options{}, small, cfg)
	first, err := h.c.GetTask(ctx, wire.Task{})
	if err != nil {
		t.Fatal(err)
	}
	second, err := h.c.GetTask(ctx, first)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.c.TaskFinished(ctx, second); err != nil {
		t.Fatal(err)
	}
	third, err := h.c.GetTask(ctx, wire.Task{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.c.TaskFailed(ctx, third, errors.New("disk on fire")); err != nil {
		t.Fatal(err)
	}
	var methods []string
	for _, e := range h.m.Events()[1:] { // after ReportDataset
		methods = append(methods, e.Method)
		if e.Arg.Dataset != "eval" {
			t.Errorf("%s sent %+v, without the dataset", e.Method, e.Arg)
		}
	}
	if want := []string{"GetTask", "GetTask", "TaskFinished", "GetTask", "TaskFailed"}; !slices.Equal(methods, want) {
		t.Errorf("calls %v, want %v", methods, want)
	}
}
