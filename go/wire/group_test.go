package wire_test

import (
	"testing"

	"github.com/trainmaster/master/go/wire"
)

// TestGroupPlanHolds: for every pass the group accepts, every rank's
// batches are the same in number, none empty, none over the batch size,
// only the last two smaller, and they add up to the rank's share.
func TestGroupPlanHolds(t *testing.T) {
	for ranks := 1; ranks <= 9; ranks++ {
		for batch := 1; batch <= 9; batch++ {
			for records := int64(0); records <= 120; records++ {
				g := wire.Group{Ranks: ranks, Batch: batch}
				if g.CheckPass(records) != nil {
					continue
				}
				k := g.Batches(records)
				for rank := range ranks {
					share := g.Share(records, rank)
					sizes := wire.BatchSizes(share, k, batch)
					if len(sizes) != k {
						t.Fatalf("%d records, %v, rank %d (share %d): sizes %v, want %d batches", records, g, rank, share, sizes, k)
					}
					var sum int64
					for i, n := range sizes {
						if n < 1 || n > batch || (n < batch && i < k-2) {
							t.Fatalf("%d records, %v, rank %d: sizes %v", records, g, rank, sizes)
						}
						sum += int64(n)
					}
					if sum != share {
						t.Fatalf("%d records, %v, rank %d: sizes %v add up to %d, share %d", records, g, rank, sizes, sum, share)
					}
				}
			}
		}
	}
}

func TestGroupCheckRank(t *testing.T) {
	for _, c := range []struct {
		g    wire.Group
		rank int
		ok   bool
	}{
		{wire.Group{Ranks: 3, Batch: 32}, 2, true},
		{wire.Group{Ranks: 3, Batch: 32}, 3, false},
		{wire.Group{Ranks: 3, Batch: 32}, -1, false},
		{wire.Group{Ranks: 0, Batch: 32}, 0, false},
		{wire.Group{Ranks: wire.MaxRanks + 1, Batch: 32}, 0, false},
		{wire.Group{Ranks: 2, Batch: 0}, 0, false},
		{wire.Group{Ranks: 2, Batch: wire.MaxBatchSize + 1}, 0, false},
	} {
		err := c.g.CheckRank(c.rank)
		if (err == nil) != c.ok || (err != nil && !wire.Is(err, wire.TextBadGroup)) {
			t.Errorf("%v rank %d: %v", c.g, c.rank, err)
		}
	}
}
