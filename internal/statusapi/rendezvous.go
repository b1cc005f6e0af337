package statusapi

import "time"

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
