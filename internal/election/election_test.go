package election

import (
	"context"
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/trainmaster/master/internal/etcdembed/etcdtest"
)

func newSession(t *testing.T, cli *clientv3.Client) *concurrency.Session {
	t.Helper()
	s, err := concurrency.NewSession(cli, concurrency.WithTTL(2))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestOneLeaderAndTakeoverOnResign(t *testing.T) {
	_, cli := etcdtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	first, err := Campaign(ctx, newSession(t, cli), "/lock/", "a")
	if err != nil {
		t.Fatal(err)
	}
	won := make(chan *Leadership, 1)
	go func() {
		l, err := Campaign(ctx, newSession(t, cli), "/lock/", "b")
		if err != nil {
			t.Error(err)
		}
		won <- l
	}()
	select {
	case <-won:
		t.Fatal("a second candidate won while the first leads")
	case <-time.After(500 * time.Millisecond):
	}
	start := time.Now()
	if err := first.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	second := <-won
	if second == nil {
		t.FailNow()
	}
	t.Logf("takeover after resign: %v", time.Since(start))
	if time.Since(start) > time.Second {
		t.Fatalf("takeover took %v after a resign", time.Since(start))
	}
	// The first leader's fence no longer holds: its writes are rejected.
	resp, err := cli.Txn(ctx).If(first.Fence()).Then(clientv3.OpPut("/x", "stale")).Commit()
	if err != nil || resp.Succeeded {
		t.Fatalf("a write fenced on the resigned leadership: succeeded %v, %v", resp.Succeeded, err)
	}
	resp, err = cli.Txn(ctx).If(second.Fence()).Then(clientv3.OpPut("/x", "fresh")).Commit()
	if err != nil || !resp.Succeeded {
		t.Fatalf("the new leader's fenced write: succeeded %v, %v", resp.Succeeded, err)
	}
}

// TestWaiterNoticesItsOwnExpiry: a candidate whose key disappears while it
// waits must not go on waiting nor ever believe it won (etcd issue 19597).
func TestWaiterNoticesItsOwnExpiry(t *testing.T) {
	_, cli := etcdtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := Campaign(ctx, newSession(t, cli), "/lock/", "a"); err != nil {
		t.Fatal(err)
	}
	waiter := newSession(t, cli)
	errc := make(chan error, 1)
	go func() {
		_, err := Campaign(ctx, waiter, "/lock/", "b")
		errc <- err
	}()
	time.Sleep(300 * time.Millisecond)
	// Revoke the waiter's lease behind its back: its key goes.
	if _, err := cli.Revoke(ctx, waiter.Lease()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, ErrSessionExpired) {
			t.Fatalf("waiter returned %v, want %v", err, ErrSessionExpired)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter kept waiting after its key was gone")
	}
}

func TestCampaignHonoursContext(t *testing.T) {
	_, cli := etcdtest.Start(t)
	if _, err := Campaign(context.Background(), newSession(t, cli), "/lock/", "a"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := Campaign(ctx, newSession(t, cli), "/lock/", "b"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("campaign behind a leader with a short context: %v", err)
	}
}

// TestContextEndsWithTheSession: a leadership's context ends with
// ErrSessionExpired as its cause once the session ends, and with
// context.Canceled when stopped first.
func TestContextEndsWithTheSession(t *testing.T) {
	_, cli := etcdtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := Campaign(ctx, newSession(t, cli), "/lock/", "a")
	if err != nil {
		t.Fatal(err)
	}
	stopped, stop := l.Context(ctx)
	stop()
	if err := context.Cause(stopped); !errors.Is(err, context.Canceled) {
		t.Fatalf("stopped context's cause: %v", err)
	}
	leading, stop := l.Context(ctx)
	defer stop()
	if leading.Err() != nil {
		t.Fatalf("the context ended while leading: %v", context.Cause(leading))
	}
	if err := l.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-leading.Done():
	case <-ctx.Done():
		t.Fatal("the context did not end with the session")
	}
	if err := context.Cause(leading); !errors.Is(err, ErrSessionExpired) {
		t.Fatalf("cause %v, want %v", err, ErrSessionExpired)
	}
}
