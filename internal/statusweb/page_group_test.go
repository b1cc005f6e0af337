package statusweb

import (
	"fmt"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/trainmaster/master/internal/statusapi"
)

// TestPageGroup: where a group of ranks trains train's pass, the page
// shows it (its size, batch and batches a rank, the pass's records) with
// a row a rank (its trainers, escaped, or none; its share, records handed
// and done), says that pieces are cut at the ranks' shares, and how many
// ranks it does not list; it shows no group while none trains, nor once
// every pass is done.
func TestPageGroup(t *testing.T) {
	three := &statusapi.GroupStatus{Ranks: 3, Batch: 32, Batches: 167, Records: 16000, PerRank: []statusapi.RankStatus{
		{Rank: 0, Trainers: []string{"gpu0-17", hostile}, Share: 5334, Handed: 5334, Done: 2400},
		{Rank: 1, Trainers: []string{"gpu1-18"}, Share: 5333, Handed: 3000, Done: 3000},
		{Rank: 2, Trainers: []string{}, Share: 5333},
	}}
	many := &statusapi.GroupStatus{Ranks: 70, Batch: 4, Batches: 58, Records: 16000, RanksNotShown: 6}
	for r := range 64 {
		many.PerRank = append(many.PerRank, statusapi.RankStatus{Rank: r, Trainers: []string{fmt.Sprintf("rank-%d", r)}, Share: 229})
	}
	for _, tc := range []struct {
		name   string
		edit   func(*statusapi.Status)
		checks []check
	}{{
		name: "three ranks",
		edit: func(st *statusapi.Status) { st.Job.Group, st.Job.Pieces = three, 2 },
		checks: []check{
			hasText("#group", "Group of ranks", "group of 3 ranks, batch 32, 167 batches a rank",
				"share of the pass's 16,000 records", "forms 167 batches of it", "pieces are cut at the ranks' shares"),
			ranks("0: gpu0-17, "+hostile+" | 5,334 | 5,334 | 2,400", "1: gpu1-18 | 5,333 | 3,000 | 3,000", "2: none | 5,333 | 0 | 0"),
			hasText("#queues", "52 + 2 pieces cut at the ranks' shares"),
			absent("#ranks-hidden"),
			escaped,
		},
	}, {
		name: "70 ranks, 64 listed",
		edit: func(st *statusapi.Status) { st.Job.Group = many },
		checks: []check{
			hasText("#group", "group of 70 ranks, batch 4, 58 batches a rank"),
			hasText("#ranks-hidden", "6 more ranks are not shown"),
			func(t *testing.T, _ string, doc *html.Node) {
				if rows := find(doc, ".rank"); len(rows) != 64 || attr(rows[63], "data-rank") != "63" {
					t.Errorf("%d rank rows", len(rows))
				}
			},
		},
	}, {
		name: "one rank of one batch, named with train beside other datasets",
		edit: func(st *statusapi.Status) {
			*st = twoDatasetsStatus()
			st.Job.Group = &statusapi.GroupStatus{Ranks: 1, Batch: 16000, Batches: 1, Records: 16000,
				PerRank: []statusapi.RankStatus{{Rank: 0, Trainers: []string{"solo"}, Share: 16000, Handed: 16000}}}
		},
		checks: []check{hasText("#group", "Group of ranks · train, group of 1 rank, batch 16000, 1 batch a rank", "forms 1 batch of it")},
	}, {
		name:   "no group",
		edit:   func(st *statusapi.Status) { st.Job.Pieces = 2 },
		checks: []check{absent("#group"), hasText("#queues", "52 + 2 pieces cut from stragglers")},
	}, {
		name: "all done",
		edit: func(st *statusapi.Status) {
			st.Job.Group, st.Job.AllDone, st.Job.Pass = three, true, 3
		},
		checks: []check{absent("#group")},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			st := leaderStatus()
			tc.edit(&st)
			body, doc := render(t, st, false)
			for _, c := range tc.checks {
				c(t, body, doc)
			}
		})
	}
}

// ranks: the rows of the group's table, each as "rank: trainers | share
// | handed | done".
func ranks(want ...string) check {
	return rows(".rank", func(n *html.Node) string {
		var cells []string
		for c := range n.ChildNodes() {
			if c.Type == html.ElementNode && c.Data == "td" {
				cells = append(cells, strings.Join(strings.Fields(textOf(c)), " "))
			}
		}
		if len(cells) != 5 {
			return fmt.Sprintf("%d cells: %q", len(cells), cells)
		}
		return fmt.Sprintf("%s: %s | %s | %s | %s", cells[0], cells[1], cells[2], cells[3], cells[4])
	}, want...)
}
