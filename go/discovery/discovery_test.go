package discovery

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/trainmaster/master/internal/etcdembed/etcdtest"
)

func TestResolveWaitsForAPublishedAddress(t *testing.T) {
	_, cli := etcdtest.Start(t)
	r := NewResolver(cli, "/job")
	got := make(chan string, 1)
	go func() {
		addr, err := r.Resolve(context.Background())
		if err != nil {
			t.Error(err)
		}
		got <- addr
	}()
	select {
	case addr := <-got:
		t.Fatalf("resolved %q before any master published", addr)
	case <-time.After(200 * time.Millisecond):
	}
	if _, err := cli.Put(context.Background(), AddrKey("/job"), "127.0.0.1:7000"); err != nil {
		t.Fatal(err)
	}
	if addr := <-got; addr != "127.0.0.1:7000" {
		t.Fatalf("resolved %q", addr)
	}
	if addr, err := r.Resolve(context.Background()); err != nil || addr != "127.0.0.1:7000" {
		t.Fatalf("resolve of a published address: %q %v", addr, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := NewResolver(cli, "/other").Resolve(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("resolve with nothing published and a short context: %v", err)
	}
}

// TestMastersReadsOldValues: a lock key written by a master before the
// status page (its host name alone) reads as that host.
func TestMastersReadsOldValues(t *testing.T) {
	_, cli := etcdtest.Start(t)
	ctx := context.Background()
	for _, kv := range [][2]string{{"/j/master/lock/1", "old-host"}, {"/j/master/lock/2", Candidate{Host: "new", PID: 3, HTTP: "h:1"}.Value()}} {
		if _, err := cli.Put(ctx, kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Masters(ctx, cli, "/j")
	want := []Master{{Candidate: Candidate{Host: "old-host"}, Key: "/j/master/lock/1", Leading: true},
		{Candidate: Candidate{Host: "new", PID: 3, HTTP: "h:1"}, Key: "/j/master/lock/2"}}
	if err != nil || len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("Masters: %+v %v", got, err)
	}
}
