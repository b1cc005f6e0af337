package taskqueue

import (
	"cmp"
	"slices"

	"github.com/trainmaster/master/go/wire"
)

// What the queues show of the group training the pass (ranks.go): each
// rank's share, the records handed to it and those it trained, and who
// holds its tasks. Derived from the ranks' entries on every call, never
// kept beside them: O(the pass's ranked entries), for a status page read
// a few times a minute.

// RankFigure is one rank of the group training the current pass.
type RankFigure struct {
	Rank int
	// Trainers are the names holding its pending entries, sorted, each
	// once; wire.Unnamed for a trainer that sent none. None while it
	// holds no task.
	Trainers []string
	Share    int64 // its share of the pass (wire.Group.Share)
	Handed   int64 // records of its pending and done entries (Handed)
	Done     int64 // records of its done entries: trained
}

// RankFigures returns the figures of the first n ranks of the group
// training the current pass, in rank order, and false when no group
// does (Group).
func (q *Queues) RankFigures(n int) ([]RankFigure, bool) {
	g, ok := q.Group()
	if !ok {
		return nil, false
	}
	figs := make([]RankFigure, min(max(n, 0), g.Ranks))
	for r := range figs {
		figs[r] = RankFigure{Rank: r, Share: g.Share(q.PassRecords(), r), Handed: q.Handed(r)}
	}
	for task, rk := range q.ranks.of {
		if rk.rank >= len(figs) {
			continue
		}
		f := &figs[rk.rank]
		switch e := q.entry(task); e.Queue {
		case Done:
			f.Done += rk.records
		case Pending:
			f.Trainers = append(f.Trainers, cmp.Or(e.Trainer, wire.Unnamed))
		}
	}
	for i := range figs {
		slices.Sort(figs[i].Trainers)
		figs[i].Trainers = slices.Compact(figs[i].Trainers)
	}
	return figs, true
}
