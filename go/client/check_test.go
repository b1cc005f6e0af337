package client

import (
	"context"
	"testing"
	"time"

	"github.com/trainmaster/master/go/client/clienttest"
	"github.com/trainmaster/master/go/wire"
)

// TestCheckGivesUpOnAFrozenMaster: the check of a task that waited asks a
// master that answers nothing for checkWait at most, then trains the task:
// a failover or an outage does not stop the training of what was read
// ahead.
func TestCheckGivesUpOnAFrozenMaster(t *testing.T) {
	frozen := clienttest.FrozenMaster(t)
	c := New(ResolverFunc(func(context.Context) (string, error) { return frozen, nil }),
		Config{Name: "t", ProgressInterval: time.Second, CallTimeout: time.Minute})
	defer c.Close()
	p := newProgress(c)
	l := &loaded{task: wire.Task{Index: 1, Epoch: 1}, fetched: time.Now().Add(-time.Minute)}
	start := time.Now()
	if !p.check(context.Background(), l) {
		t.Fatal("a task the master could not check was dropped")
	}
	if took := time.Since(start); took > checkWait+3*time.Second {
		t.Fatalf("the check took %v, past checkWait %v", took, checkWait)
	}
}
