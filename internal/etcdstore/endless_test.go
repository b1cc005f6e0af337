package etcdstore

import (
	"strings"
	"testing"

	"github.com/trainmaster/master/internal/dataset"
	"github.com/trainmaster/master/internal/etcdembed/etcdtest"
)

// TestEndlessIsStored: a dataset without end is stored so ("endless":true
// in its meta, a field of its own) and loaded so; a meta without the
// field, as every master before it wrote, loads with an end.
func TestEndlessIsStored(t *testing.T) {
	_, cli := etcdtest.Start(t)
	for _, endless := range []bool{true, false} {
		store, l := lead(t, cli, "/endless")
		rng, err := dataset.NewRange(100, 10)
		if err != nil {
			t.Fatal(err)
		}
		rng.Name, rng.Endless = "eval", endless
		if err := store.SaveDataset(ctx, rng); err != nil {
			t.Fatal(err)
		}
		resp, err := cli.Get(ctx, "/endless/task_queues/meta")
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("meta: %v", err)
		}
		if got := strings.Contains(string(resp.Kvs[0].Value), `"endless":true`); got != endless {
			t.Fatalf("meta %s, want endless %v", resp.Kvs[0].Value, endless)
		}
		snap, err := store.Load(ctx)
		if err != nil || snap.Dataset.Endless != endless || snap.Dataset.Passes != 0 {
			t.Fatalf("loaded %+v, %v; want endless %v", snap.Dataset, err, endless)
		}
		if err := l.Resign(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
