package wire

import (
	"time"

	"github.com/pkg/errors"
)

// The rendezvous of elastic agents: where a launcher's agents (torchrun's,
// through python -m trainmaster.run) meet to form the rounds of a job, on
// the trainer port beside the Master service:
//
//	Rendezvous.Join(j RendezvousJoin, reply *RendezvousView) error
//	Rendezvous.Poll(p RendezvousPoll, reply *RendezvousView) error
//	Rendezvous.Publish(p RendezvousPublish, reply *RendezvousView) error
//	Rendezvous.Close(c RendezvousClose, reply *RendezvousView) error
//
// An agent draws a Token once and sends it, with its node's name, on every
// call. Join leaves the round the node took part in, if any, and joins the
// round being formed (or waits for the next, while one is complete); the
// agent then polls, about once a second, until its view is Complete with
// it a Participant, and keeps polling while its workers run: the poll is
// its heartbeat, and a view with Waiting above 0 tells it to restart its
// workers and join again. Once a round is complete, its rank 0 hosts the
// store the round's agents share (torch's TCPStore) and Publishes its
// address; the others poll until their view carries it. Each round hosts
// its own, so that no node's death takes a later round's store with it. A
// node that stops polling for the run's Grace is dropped. Close closes the run: no more joins. The master keeps each run
// in etcd, fenced, so that a new leader continues the same round.

// RendezvousServiceName is the rendezvous' net/rpc service name.
const RendezvousServiceName = "Rendezvous"

// Texts of the rendezvous' errors.
const (
	TextRendezvousClosed = "rendezvous closed"
	TextBadRendezvous    = "bad rendezvous join"
	TextNodeIdentity     = "node held by another agent"
	TextRendezvousFull   = "rendezvous full"
)

// The rendezvous' errors, of those texts (WithKind: "<text>: <why>").
var (
	ErrRendezvousClosed = errors.New(TextRendezvousClosed)
	ErrBadRendezvous    = errors.New(TextBadRendezvous)
	ErrNodeIdentity     = errors.New(TextNodeIdentity)
	ErrRendezvousFull   = errors.New(TextRendezvousFull)
)

// Limits of the rendezvous' calls.
const (
	MaxRunIDBytes = 128
	MaxRendezvous = 16 // runs one master keeps
	MaxWhyBytes   = 512
	MaxRdzvNodes  = 4096                                // nodes of a round, and nodes waiting
	MaxNodeBytes  = 256                                 // a node's name, a token
	MaxRdzvWaitMs = int64(time.Hour / time.Millisecond) // a last call, a grace
)

// RendezvousPoll is what Rendezvous.Poll carries: the run, and the node
// polling with its agent's token.
type RendezvousPoll struct {
	Run, Node, Token string
}

// RendezvousJoin is what Rendezvous.Join carries: the node, and the run's
// shape, the same from every node of the run.
type RendezvousJoin struct {
	RendezvousPoll
	MinNodes, MaxNodes int
	LastCallMs         int64 // how long a round with MinNodes waits for more
	GraceMs            int64 // how long a node may go without polling
	// Attempt numbers the agent's calls for a round (next_rendezvous),
	// from 1: a Join whose node is in the run under the same token and
	// Attempt is a retry of one answered before (its reply lost, perhaps
	// to a failover), and changes nothing. 0: every Join is a new one.
	Attempt int64
}

// RendezvousPublish is what Rendezvous.Publish carries: the address
// (host:port) of the store rank 0 of the complete round hosts.
type RendezvousPublish struct {
	RendezvousPoll
	Store string
}

// RendezvousClose is what Rendezvous.Close carries.
type RendezvousClose struct {
	RendezvousPoll
	Why string
}

// RendezvousView is a node's view of a run.
type RendezvousView struct {
	Round       int
	Complete    bool
	Closed      bool
	Participant bool // the node takes part in the round
	Queued      bool // the node waits for the next round
	// Rank and World, once Complete, for a participant; -1 and 0 before.
	Rank, World  int
	Participants int
	Waiting      int    // nodes waiting for the next round
	Store        string // the round's store, once its rank 0 published it
}

// Check refuses a poll no run could answer.
func (p RendezvousPoll) Check() error {
	if p.Run == "" || len(p.Run) > MaxRunIDBytes {
		return WithKind(ErrBadRendezvous, errors.Errorf("a run ID takes 1 to %d bytes; got %d", MaxRunIDBytes, len(p.Run)))
	}
	return nil
}
