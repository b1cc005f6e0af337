package monitor

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/trainmaster/master/internal/rendezvous"
	"github.com/trainmaster/master/internal/statusapi"
)

// rdzvSource is a leading service with rendezvous runs.
type rdzvSource struct {
	jobSource
	runs map[string]rendezvous.Run
}

func (s rdzvSource) RendezvousRuns() map[string]rendezvous.Run { return s.runs }

// TestRendezvousOfAnySource: the status and the gauges show each run of
// the leading service: its round, its nodes with their ranks or waiting,
// the round's store, and its last change.
func TestRendezvousOfAnySource(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	cfg := rendezvous.Config{MinNodes: 2, MaxNodes: 3, LastCall: time.Second, Grace: time.Minute}
	var run rendezvous.Run
	for _, node := range []string{"b", "a", "a", "c"} { // a joins again, and c joins: both wait for round 1
		if err := run.Join(t0, node, "t-"+node, 0, cfg); err != nil {
			t.Fatal(err)
		}
		run.Tick(t0.Add(time.Second))
	}
	m, _ := newMonitor(Config{})
	m.Lead(rdzvSource{runs: map[string]rendezvous.Run{"job-1": run}})
	got := m.Status().Rendezvous
	if len(got) != 1 || got[0].Run != "job-1" || got[0].Round != 0 || !got[0].Complete || got[0].MinNodes != 2 ||
		len(got[0].Nodes) != 3 || got[0].Nodes[0] != (statusapi.RdzvNode{Name: "a", Rank: -1, Waiting: true}) ||
		got[0].Nodes[1] != (statusapi.RdzvNode{Name: "b", Rank: 1}) || got[0].Last != "node c waits for round 1" {
		t.Fatalf("rendezvous %+v", got)
	}
	if err := testutil.CollectAndCompare(m.Collector(), strings.NewReader(`# HELP trainmaster_rendezvous_nodes Nodes of the rendezvous run: participants of its round, and nodes waiting for the next.
# TYPE trainmaster_rendezvous_nodes gauge
trainmaster_rendezvous_nodes{run="job-1",state="participant"} 1
trainmaster_rendezvous_nodes{run="job-1",state="waiting"} 2
# HELP trainmaster_rendezvous_round The round of the rendezvous run of the job's elastic agents.
# TYPE trainmaster_rendezvous_round gauge
trainmaster_rendezvous_round{run="job-1"} 0
`), "trainmaster_rendezvous_nodes", "trainmaster_rendezvous_round"); err != nil {
		t.Error(err)
	}
}
