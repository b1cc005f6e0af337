package statusweb

import (
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/trainmaster/master/internal/statusapi"
)

// TestPageRendezvous: the page shows each run of the job's elastic agents
// (its round and state, its nodes with their ranks or waiting, the round's
// store, its last change and when), names escaped; a job without one
// shows no section.
func TestPageRendezvous(t *testing.T) {
	st := leaderStatus()
	st.Rendezvous = []statusapi.RendezvousStatus{{Run: "job-1", Round: 2, Complete: true, MinNodes: 2, MaxNodes: 3, Store: "127.0.0.1:29500",
		Nodes: []statusapi.RdzvNode{{Name: hostile, Rank: 0}, {Name: "node-b", Rank: 1}, {Name: "node-c", Rank: -1, Waiting: true}},
		Last:  "node node-c waits for round 3", LastAt: pageNow.Add(-30 * time.Second)}}
	body, doc := render(t, st, false)
	for _, c := range []check{
		rows(".run", func(n *html.Node) string { return attr(n, "data-run") + ": " + squeeze(textOf(n)) },
			"job-1: "+squeeze("job-1: round 2 complete, 2 to 3 nodes, store at 127.0.0.1:29500 "+hostile+" (rank 0), node-b (rank 1), node-c (waiting) Last change, 30 s ago: node node-c waits for round 3")),
		escaped,
	} {
		c(t, body, doc)
	}
	body, doc = render(t, leaderStatus(), false)
	absent("#rendezvous")(t, body, doc)
}
