package client_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trainmaster/master/go/client"
	"github.com/trainmaster/master/go/client/clienttest"
	"github.com/trainmaster/master/go/wire"
)

// TestCallFollowsAMovedMaster: a call waiting on a frozen master gives up
// as soon as the Resolver names another master, and is answered there,
// instead of waiting for CallTimeout.
func TestCallFollowsAMovedMaster(t *testing.T) {
	h := setup(t, clienttest.Options{}, small, fast)
	frozen := clienttest.FrozenMaster(t)
	var resolves atomic.Int64
	cfg := fast
	cfg.CallTimeout = time.Minute
	c := client.New(client.ResolverFunc(func(context.Context) (string, error) {
		if resolves.Add(1) == 1 {
			return frozen, nil // the master the client first finds, before it froze
		}
		return h.m.Addr(), nil // the standby that took over
	}), cfg)
	defer c.Close()
	start := time.Now()
	task, err := c.GetTask(context.Background(), wire.Task{})
	if err != nil || task.Epoch == 0 {
		t.Fatalf("GetTask: %+v, %v", task, err)
	}
	if took := time.Since(start); took >= cfg.CallTimeout/2 {
		t.Fatalf("the call took %v: it waited for the frozen master", took)
	}
}
