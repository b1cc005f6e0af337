package statusapi

import "fmt"

// GroupStatus is the group of ranks training a dataset's current pass
// (synchronous data-parallel training: protocol.md, Groups of ranks).
type GroupStatus struct {
	Ranks   int   `json:"ranks"`
	Batch   int   `json:"batch"`            // records in each rank's batch
	Batches int   `json:"batches_per_rank"` // K: the batches every rank forms in the pass
	Records int64 `json:"records"`          // N: the records of the pass the ranks' shares divide
	// PerRank are its first master.MaxShownRanks ranks, in rank order;
	// RanksNotShown counts the others.
	PerRank       []RankStatus `json:"per_rank"`
	RanksNotShown int          `json:"ranks_not_shown"`
}

// RankStatus is one rank of a group, in the current pass.
type RankStatus struct {
	Rank int `json:"rank"`
	// Trainers are the names holding its pending tasks, sorted ("unnamed"
	// for one that sent none); empty while it holds none.
	Trainers []string `json:"trainers"`
	Share    int64    `json:"share"`          // its records of the pass
	Handed   int64    `json:"records_handed"` // records of the tasks it holds or finished
	Done     int64    `json:"records_done"`   // records of the tasks it finished: trained
}

// Text describes the group in a few words: "group of 3 ranks, batch 32,
// 105 batches a rank".
func (g *GroupStatus) Text() string {
	ranks, batches := "ranks", "batches"
	if g.Ranks == 1 {
		ranks = "rank"
	}
	if g.Batches == 1 {
		batches = "batch"
	}
	return fmt.Sprintf("group of %d %s, batch %d, %d %s a rank", g.Ranks, ranks, g.Batch, g.Batches, batches)
}
