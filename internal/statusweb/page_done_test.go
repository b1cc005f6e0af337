package statusweb

import (
	"testing"

	"github.com/trainmaster/master/internal/statusapi"
)

// TestPageFinishedDataset: once every pass of train is done, the page says
// "all N passes done" where the queues of the current pass were, rather
// than the empty queues of a pass that does not exist; one pass is "1
// pass".
func TestPageFinishedDataset(t *testing.T) {
	for _, tc := range []struct {
		passes int
		want   string
	}{{2, "All 2 passes done"}, {1, "All 1 pass done"}} {
		st := leaderStatus()
		j := st.Job
		j.Pass, j.Passes, j.AllDone, j.Todo, j.Pending, j.Done, j.Failed, j.RecordsDone = tc.passes, tc.passes, true, 0, 0, 0, 0, 0
		j.PassETASeconds, j.JobETASeconds, j.Discarded = nil, nil, []statusapi.DiscardedTask{}
		body, doc := render(t, st, false)
		for _, c := range []check{
			hasText("title", tc.want[len("All "):]),
			hasText("#queues", "Tasks", "52 a pass", tc.want),
			absent(".queue-list", "#queues .stack"),
		} {
			c(t, body, doc)
		}
	}
}
