package client

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/trainmaster/master/go/wire"
)

// TestCheckGivesUpOnAFrozenMaster: the check of a task that waited asks a
// master that answers nothing for checkWait at most, then trains the task:
// a failover or an outage does not stop the training of what was read
// ahead.
func TestCheckGivesUpOnAFrozenMaster(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	go func() {
		for {
			conn, err := lis.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				io.Copy(io.Discard, conn) // reads every call, answers none
			}()
		}
	}()
	c := New(ResolverFunc(func(context.Context) (string, error) { return lis.Addr().String(), nil }),
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
