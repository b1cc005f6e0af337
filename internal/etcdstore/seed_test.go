package etcdstore

import (
	"encoding/json"
	"fmt"
	"math"
	"testing"

	"github.com/trainmaster/master/internal/etcdembed/etcdtest"
)

// TestShuffleSeedIsStoredWithTheDataset: the seed goes into the meta key
// and comes back with the dataset; without one the key has no
// shuffle_seed, as meta written before the seed existed, and loads as 0.
func TestShuffleSeedIsStoredWithTheDataset(t *testing.T) {
	_, cli := etcdtest.Start(t)
	for _, seed := range []uint64{0, 7, math.MaxUint64} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			ns := fmt.Sprintf("/seed-%d", seed)
			store, _ := lead(t, cli, ns)
			ds := syntheticDataset(t, 20, 2)
			ds.ShuffleSeed = seed
			if err := store.SaveDataset(ctx, ds); err != nil {
				t.Fatal(err)
			}
			resp, err := cli.Get(ctx, ns+"/task_queues/meta")
			if err != nil || len(resp.Kvs) != 1 {
				t.Fatalf("read meta: %v", err)
			}
			var stored struct {
				Seed *uint64 `json:"shuffle_seed"`
			}
			if err := json.Unmarshal(resp.Kvs[0].Value, &stored); err != nil {
				t.Fatal(err)
			}
			if seed == 0 && stored.Seed != nil || seed != 0 && (stored.Seed == nil || *stored.Seed != seed) {
				t.Fatalf("meta %s, want shuffle_seed %d (absent for 0)", resp.Kvs[0].Value, seed)
			}
			snap, err := store.Load(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if snap.Dataset.ShuffleSeed != seed {
				t.Fatalf("loaded seed %d, saved %d", snap.Dataset.ShuffleSeed, seed)
			}
		})
	}
}
