package etcdstore

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/trainmaster/master/internal/etcdembed/etcdtest"
	"github.com/trainmaster/master/internal/master"
	"github.com/trainmaster/master/internal/rendezvous"
)

// TestRunsRoundTrip: a rendezvous run stored in real etcd, readable with
// etcdctl, comes back the same but for its members' heartbeats; a value
// no master wrote is refused, naming its key; a run deleted is gone; a
// master that lost the lock stores and deletes nothing.
func TestRunsRoundTrip(t *testing.T) {
	_, cli := etcdtest.Start(t)
	_, l := lead(t, cli, "/job")
	cat := NewCatalog(Config{Client: cli, Namespace: "/job", Fence: l.Fence()})
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	cfg := rendezvous.Config{MinNodes: 2, MaxNodes: 3, LastCall: 10 * time.Second, Grace: 30 * time.Second}
	var run rendezvous.Run
	for _, node := range []string{"a", "b", "c"} {
		if err := run.Join(now, node, "token-"+node, 0, cfg); err != nil {
			t.Fatal(err)
		}
	}
	if err := run.Join(now, "a", "token-a", 2, cfg); err != nil { // a waits for round 1
		t.Fatal(err)
	}
	if err := cat.SaveRun(ctx, "job/7", run); err != nil {
		t.Fatal(err)
	}
	runs, err := cat.LoadRuns(ctx)
	got := runs["job/7"]
	if err != nil || len(runs) != 1 || got.Round != 0 || !got.Complete || got.Config != cfg || got.Last != run.Last ||
		got.Members["b"].Rank != 1 || !got.Members["a"].Waiting || got.Members["c"].Token != "token-c" || !got.Members["c"].Seen.IsZero() || got.Members["a"].Attempt != 2 {
		t.Fatalf("loaded %+v %v, want %+v", runs, err, run)
	}
	resp, err := cli.Get(ctx, "/job/rendezvous/job/7")
	var shown map[string]any
	if err != nil || len(resp.Kvs) != 1 || json.Unmarshal(resp.Kvs[0].Value, &shown) != nil || shown["complete"] != true {
		t.Fatalf("as etcdctl shows it: %s %v", resp.Kvs, err)
	}
	for _, bad := range []string{`{"format": 1, "round": 0, "members": {"a": {"rank": 9}}, "config": {"min": 1, "max": 2, "grace_ms": 1}}`, `{"round": -1}`, `nope`} {
		if _, err := cli.Put(ctx, "/job/rendezvous/bad", bad); err != nil {
			t.Fatal(err)
		}
		if _, err := cat.LoadRuns(ctx); err == nil || !strings.Contains(err.Error(), "/job/rendezvous/bad") {
			t.Errorf("loading %s: %v", bad, err)
		}
	}
	if err := cat.SaveRun(ctx, "job/8", run); err != nil {
		t.Fatal(err)
	}
	if err := cat.DeleteRun(ctx, "job/8"); err != nil {
		t.Fatal(err)
	}
	if resp, err := cli.Get(ctx, "/job/rendezvous/job/8"); err != nil || len(resp.Kvs) != 0 {
		t.Fatalf("a run deleted: %v %v", resp, err)
	}
	if err := l.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	lead(t, cli, "/job")
	if err := cat.SaveRun(ctx, "job/7", run); !errors.Is(err, master.ErrLeadershipLost) {
		t.Fatalf("a save after losing the lock: %v", err)
	}
	if err := cat.DeleteRun(ctx, "job/7"); !errors.Is(err, master.ErrLeadershipLost) {
		t.Fatalf("a delete after losing the lock: %v", err)
	}
}
