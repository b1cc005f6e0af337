package monitor

import (
	"maps"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/trainmaster/master/internal/rendezvous"
	"github.com/trainmaster/master/internal/statusapi"
)

// The rendezvous runs of the job's elastic agents, as the leading service
// keeps them (JobSource.RendezvousRuns): the page's and the gauges'.

// RendezvousStatus is what the status shows of runs, by run ID (also
// master inspect's, read from etcd).
func RendezvousStatus(runs map[string]rendezvous.Run) []statusapi.RendezvousStatus {
	var out []statusapi.RendezvousStatus
	for _, id := range slices.Sorted(maps.Keys(runs)) {
		run := runs[id]
		st := statusapi.RendezvousStatus{Run: id, Round: run.Round, Complete: run.Complete, Closed: run.Closed,
			MinNodes: run.Config.MinNodes, MaxNodes: run.Config.MaxNodes, Store: run.Store, Last: run.Last.Why, LastAt: run.Last.At.UTC(),
			Nodes: []statusapi.RdzvNode{}}
		for _, name := range slices.Sorted(maps.Keys(run.Members)) {
			m := run.Members[name]
			st.Nodes = append(st.Nodes, statusapi.RdzvNode{Name: name, Rank: m.Rank, Waiting: m.Waiting})
		}
		out = append(out, st)
	}
	return out
}

// collectRendezvous sends each run's round and its nodes, participants
// and waiting.
func collectRendezvous(ch chan<- prometheus.Metric, runs []statusapi.RendezvousStatus) {
	for _, r := range runs {
		var participants, waiting float64
		for _, n := range r.Nodes {
			if n.Waiting {
				waiting++
			} else {
				participants++
			}
		}
		ch <- prometheus.MustNewConstMetric(rdzvRound, prometheus.GaugeValue, float64(r.Round), r.Run)
		ch <- prometheus.MustNewConstMetric(rdzvNodes, prometheus.GaugeValue, participants, r.Run, "participant")
		ch <- prometheus.MustNewConstMetric(rdzvNodes, prometheus.GaugeValue, waiting, r.Run, "waiting")
	}
}
