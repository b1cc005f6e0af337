package statusweb

import (
	"testing"
	"time"

	"github.com/trainmaster/master/internal/statusapi"
)

// TestPageTrainers: the trainers' heading counts those connected, stalled
// (when any) and tracked; a row says when its trainer was lost (its task
// taken back for want of a connection) or is gone (has no connection
// open), and says neither of one connected. The page says
// how many trainers that called lately the master does not track, beside
// those its table does not show, and says nothing of them when there are
// none.
func TestPageTrainers(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status statusapi.Status
		checks []check
	}{{
		name:   "connected, stalled and tracked",
		status: leaderStatus(),
		checks: []check{
			hasText("#trainers-count", "240 connected, 1 stalled, 250 tracked"),
			attrIs(".count-connected", "data-connected", "240"), attrIs(".count-stalled", "data-stalled", "1"),
			attrIs(".count-tracked", "data-tracked", "250"),
			absent(".badge.lost", ".badge.gone"),
		},
	}, {
		name: "none stalled",
		status: func() statusapi.Status {
			st := leaderStatus()
			st.TrainersConnected, st.TrainersStalled = 10_000, 0
			return st
		}(),
		checks: []check{hasText("#trainers-count", "10,000 connected, 250 tracked"), absent(".count-stalled")},
	}, {
		name: "one lost, one gone",
		status: func() statusapi.Status {
			st := leaderStatus()
			st.Trainers[0].Connected, st.Trainers[0].Lost, st.Trainers[0].Task, st.Trainers[0].Holding = false, true, nil, 0
			st.Trainers[1].Connected, st.Trainers[1].LastSeen = false, pageNow.Add(-time.Minute)
			return st
		}(),
		checks: []check{
			hasText(".trainer.stalled", "stalled", "lost", "nothing"),
			hasText(".badge.lost", "lost"), hasText(".badge.gone", "gone"),
		},
	}, {
		name: "a flood of names beside the holders",
		status: func() statusapi.Status {
			st := leaderStatus()
			st.TrainersUntracked = 99_000
			return st
		}(),
		checks: []check{
			hasText("#trainers-untracked", "99,000 more trainers that called lately are not shown and not tracked", "at most -max-trainers in all"),
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
