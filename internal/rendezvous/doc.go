// Package rendezvous is the master's rendezvous of elastic agents: the
// state a launcher's agents (torchrun's, through python -m trainmaster.run)
// meet in to form the rounds of a job, and the rules that move it.
//
// A job's rendezvous (a Run, named by the launcher's run_id) forms rounds.
// Nodes join the round being formed; once MinNodes have joined, it waits a
// LastCall for more, and it is complete at once with MaxNodes. A complete
// round gives each participant a rank, in the order of the nodes' names.
// A node that joins while a round is complete waits for the next round,
// and the agents of the complete round, seeing a node waiting, restart
// their workers and join again: the round is over once every participant
// has left it. A node whose heartbeats stop for the Grace is dropped from
// the round and from the waiting nodes; the agents of a complete round
// lose a participant that way, and their workers fail and rejoin. A closed
// run takes no more joins.
//
// It is the same state machine as torch's dynamic rendezvous (torch
// 1.13's torch.distributed.elastic.rendezvous.dynamic_rendezvous), kept
// by the master rather than by compare-and-set in a store the agents
// share, so that the master can show it and bound it: a node's calls
// carry a token its agent draws once, and a call of a node alive under
// another token is refused, so that no agent can take another's place.
//
// The package is pure logic: a Run changes only through its methods, which
// take the time from the caller and say what changed and why; the master
// stores a Run whole after every change and restores it on failover.
package rendezvous
