package statusweb

import (
	"testing"

	"github.com/trainmaster/master/internal/statusapi"
)

// TestPageUntrackedTrainers: the page says how many trainers that called
// lately the master does not track, beside those its table does not
// show, and says nothing of them when there are none.
func TestPageUntrackedTrainers(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status statusapi.Status
		checks []check
	}{{
		name: "a flood of names beside the holders",
		status: func() statusapi.Status {
			st := leaderStatus()
			st.TrainersUntracked = 99_000
			return st
		}(),
		checks: []check{
			hasText("#trainers-untracked", "99,000 more trainers that called lately are not shown and not tracked", "-max-trainers-shown"),
			hasText("#trainers-hidden", "247 more trainers are not shown"),
		},
	}, {
		name:   "one left out, none tracked",
		status: statusapi.Status{Time: pageNow, Leading: true, TrainersUntracked: 1},
		checks: []check{hasText("#trainers-untracked", "1 more trainer that called lately is not shown")},
	}, {
		name:   "none left out",
		status: leaderStatus(),
		checks: []check{absent("#trainers-untracked")},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			body, doc := render(t, tc.status, false)
			for _, c := range tc.checks {
				c(t, body, doc)
			}
		})
	}
}
