package wire

import (
	"fmt"

	"github.com/pkg/errors"
)

// Groups of ranks: synchronous data-parallel training (PyTorch's DDP), where
// W processes (ranks) step together and every step ends in an all-reduce.
// Every rank must run the same number of steps in a pass, or the rank that
// runs out first leaves the others blocked in an all-reduce. So the ranks
// of a group do not balance a pass between them as independent trainers
// do: each rank is handed a fixed share of the pass's records, and each
// forms the same number of batches of it.
//
// A trainer asks as rank Rank of a group of Ranks ranks with batch size
// Batch by setting the three in GetTask's argument (Ranks > 0). The master
// hands the rank its share task by task from the head of Todo; the task
// that would overflow the share is cut at the share's end, and its rest is
// handed to the next rank that asks (the group's tail). The reply carries
// the rank's plan: RankRecords (its share), RankBatches (the batches every
// rank forms in the pass) and RankLeft (what of its share is still to come
// after this task). Once a rank has been handed its whole share, GetTask
// answers TextRankDone; with OnePass it asks for the next pass, and waits
// (TextNoTask) until the master is there.
//
// The plan, for a pass of N records, W ranks and batch size B:
//
//	share of rank r:   N/W, plus one for each of the first N mod W ranks
//	batches per rank:  K = ceil(ceil(N/W) / B)
//	a rank's batches:  BatchSizes(share, K, B): K-1 batches of B and the
//	                   rest; a share of exactly (K-1)*B records ends in
//	                   batches of B-1 and 1 instead, so that it too has K
//
// A pass with fewer records than ranks, or batch size 1 with N not a
// multiple of W, cannot give every rank K non-empty batches: it is refused
// with TextPassTooSmall. A rank that disagrees with the group on Ranks or
// Batch, and a trainer outside the group asking while the group trains the
// pass (or a rank while independent trainers do), is refused with
// TextBadGroup.

// The group's limits: what a GetTask may ask for.
const (
	MaxRanks     = 1 << 16 // ranks in a group
	MaxBatchSize = 1 << 20 // records in a batch
)

// The error texts of groups (the contract's, like wire.Text*).
const (
	// TextRankDone: the rank asking has been handed its whole share of
	// the pass; it asks for the next pass (OnePass), which waits until
	// the whole pass is over.
	TextRankDone = "rank done"
	// TextBadGroup: the group named in the call disagrees with the group
	// training the pass (its size or batch size), or a trainer outside a
	// group asks while a group trains the pass, or the reverse; or the
	// rank is out of range. Final for that call: the message names both
	// sides.
	TextBadGroup = "bad group"
	// TextPassTooSmall: the pass has too few records to give every rank
	// of the group the same number of non-empty batches; the message
	// names the numbers.
	TextPassTooSmall = "pass too small for the group"
)

// The contract's errors of groups, one per text.
var (
	ErrRankDone     = errors.New(TextRankDone)
	ErrBadGroup     = errors.New(TextBadGroup)
	ErrPassTooSmall = errors.New(TextPassTooSmall)
)

// Group is a group of ranks, as a GetTask names it.
type Group struct {
	Ranks int // ranks in the group
	Batch int // records in each rank's batch
}

// GroupOf returns the group a GetTask's argument names, and false for a
// trainer outside any group (Ranks 0).
func GroupOf(t Task) (Group, bool) {
	return Group{Ranks: t.Ranks, Batch: t.Batch}, t.Ranks != 0
}

// CheckRank returns an error carrying TextBadGroup when rank of g is
// outside the contract's bounds.
func (g Group) CheckRank(rank int) error {
	switch {
	case g.Ranks < 1 || g.Ranks > MaxRanks:
		return WithKind(ErrBadGroup, errors.Errorf("a group of %d ranks (want 1 to %d)", g.Ranks, MaxRanks))
	case g.Batch < 1 || g.Batch > MaxBatchSize:
		return WithKind(ErrBadGroup, errors.Errorf("batch size %d (want 1 to %d)", g.Batch, MaxBatchSize))
	case rank < 0 || rank >= g.Ranks:
		return WithKind(ErrBadGroup, errors.Errorf("rank %d of a group of %d ranks (want 0 to %d)", rank, g.Ranks, g.Ranks-1))
	}
	return nil
}

func (g Group) String() string {
	return fmt.Sprintf("%d ranks, batch %d", g.Ranks, g.Batch)
}

// Share returns rank's share of a pass of records records.
func (g Group) Share(records int64, rank int) int64 {
	w := int64(g.Ranks)
	share := records / w
	if int64(rank) < records%w {
		share++
	}
	return share
}

// Batches returns K, the batches every rank forms in a pass of records
// records.
func (g Group) Batches(records int64) int {
	w, b := int64(g.Ranks), int64(g.Batch)
	most := (records + w - 1) / w
	return int((most + b - 1) / b)
}

// CheckPass returns an error carrying TextPassTooSmall when a pass of
// records records cannot give every rank of g the same number of
// non-empty batches.
func (g Group) CheckPass(records int64) error {
	switch {
	case records < int64(g.Ranks):
		return WithKind(ErrPassTooSmall, errors.Errorf("%d records in the pass, %d ranks: every rank needs one at least", records, g.Ranks))
	case g.Batch == 1 && records%int64(g.Ranks) != 0:
		return WithKind(ErrPassTooSmall, errors.Errorf("%d records in the pass, %d ranks, batch size 1: the shares differ, and batches of one cannot even them (give batch size 2 or more)", records, g.Ranks))
	}
	return nil
}

// BatchSizes returns the sizes of the batches a rank forms of its share of
// a pass whose ranks form batches batches each, of batch records at most
// (Group.Batches): batches-1 of batch records and the rest, or, for a share
// of exactly (batches-1)*batch records, batches-2 full ones then batch-1
// and 1. It returns nil for a share no plan fits (Group.CheckPass refuses
// such passes).
func BatchSizes(share int64, batches, batch int) []int {
	full := int64(batches-1) * int64(batch)
	switch {
	case batches < 1 || batch < 1 || share > full+int64(batch) || share < full:
		return nil
	case share > full:
		sizes := make([]int, batches)
		for i := range sizes[:batches-1] {
			sizes[i] = batch
		}
		sizes[batches-1] = int(share - full)
		return sizes
	case batches < 2 || batch < 2:
		return nil
	}
	sizes := make([]int, batches)
	for i := range sizes[:batches-2] {
		sizes[i] = batch
	}
	sizes[batches-2], sizes[batches-1] = batch-1, 1
	return sizes
}
