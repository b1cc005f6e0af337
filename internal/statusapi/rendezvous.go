package statusapi

import (
	"fmt"
	"strings"
	"time"
)

// RendezvousStatus is one rendezvous run of the job's elastic agents
// (protocol.md, Rendezvous), as the leader keeps it.
type RendezvousStatus struct {
	Run      string     `json:"run"`
	Round    int        `json:"round"`
	Complete bool       `json:"complete"`
	Closed   bool       `json:"closed"`
	MinNodes int        `json:"min_nodes"`
	MaxNodes int        `json:"max_nodes"`
	Nodes    []RdzvNode `json:"nodes"` // by name
	Store    string     `json:"store,omitempty"`
	Last     string     `json:"last_change"` // what changed last, and why
	LastAt   time.Time  `json:"last_change_time"`
}

// RdzvNode is a node of a run: a participant of its round (with its rank
// once the round is complete, -1 before) or waiting for the next.
type RdzvNode struct {
	Name    string `json:"name"`
	Rank    int    `json:"rank"`
	Waiting bool   `json:"waiting"`
}

// Text says what the run is at, in a line, for people: its round, whether
// complete, its nodes with their ranks or waiting, and its last change.
func (r RendezvousStatus) Text() string {
	state := "forming"
	switch {
	case r.Closed:
		state = "closed"
	case r.Complete:
		state = "complete"
	}
	var nodes []string
	for _, n := range r.Nodes {
		switch {
		case n.Waiting:
			nodes = append(nodes, n.Name+" (waiting)")
		case n.Rank >= 0:
			nodes = append(nodes, fmt.Sprintf("%s (rank %d)", n.Name, n.Rank))
		default:
			nodes = append(nodes, n.Name)
		}
	}
	list := "no node"
	if len(nodes) > 0 {
		list = strings.Join(nodes, ", ")
	}
	return fmt.Sprintf("run %s: round %d %s, nodes %d:%d: %s; last: %s (%s)", r.Run, r.Round, state, r.MinNodes, r.MaxNodes,
		list, r.Last, r.LastAt.Format(time.RFC3339))
}
