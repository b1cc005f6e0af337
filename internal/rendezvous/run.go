package rendezvous

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/pkg/errors"

	"github.com/trainmaster/master/go/wire"
)

// Errors of a Run's methods, the wire's (go/wire/rendezvous.go): each
// error is one of these with the run, node and limits involved.
var (
	ErrClosed   = wire.ErrRendezvousClosed
	ErrBadJoin  = wire.ErrBadRendezvous
	ErrIdentity = wire.ErrNodeIdentity
	ErrFull     = wire.ErrRendezvousFull
)

// Limits on what a client can make a run hold.
const (
	MaxNodes     = wire.MaxRdzvNodes
	MaxNameBytes = wire.MaxNodeBytes
	maxWait      = time.Duration(wire.MaxRdzvWaitMs) * time.Millisecond
)

// Config is a run's shape, set by its first join; every later join must
// name the same.
type Config struct {
	MinNodes, MaxNodes int
	// LastCall is how long a round with MinNodes waits for more nodes.
	LastCall time.Duration
	// Grace is how long a node may go without a heartbeat before it is
	// dropped.
	Grace time.Duration
}

// Check refuses a config no round can be formed with.
func (c Config) Check() error {
	switch {
	case c.MinNodes < 1 || c.MaxNodes < c.MinNodes || c.MaxNodes > MaxNodes:
		return wire.WithKind(ErrBadJoin, errors.Errorf("nodes %d:%d: want 1 <= min <= max <= %d", c.MinNodes, c.MaxNodes, MaxNodes))
	case c.LastCall < 0 || c.Grace <= 0 || c.LastCall > maxWait || c.Grace > maxWait:
		return wire.WithKind(ErrBadJoin, errors.Errorf("last call %v, grace %v: want a last call of 0 to %v and a grace above 0, to %v", c.LastCall, c.Grace, maxWait, maxWait))
	}
	return nil
}

// Member is a node of a run: a participant of the round, or waiting for
// the next.
type Member struct {
	Token   string
	Rank    int // its rank once the round is complete; -1 before
	Waiting bool
	Seen    time.Time // its last call
	Attempt int64     // the Join it came with (wire.RendezvousJoin.Attempt)
}

// Change is what a run's last change was, for people.
type Change struct {
	At  time.Time
	Why string
}

// Run is a job's rendezvous. Its zero value is a run no node joined yet.
type Run struct {
	Config   Config
	Round    int
	Complete bool
	Closed   bool
	// Members change through Run's methods only (put, drop): they keep
	// the counts of participants and waiting nodes.
	Members map[string]Member
	// Deadline is when the round, at MinNodes or more, stops waiting for
	// more; zero while it has fewer.
	Deadline time.Time
	// Store is the address of the store the agents of the complete round
	// share, hosted by its rank 0 (Publish); "" until published, and
	// again once the round is over: each round hosts its own, so that no
	// node's death takes the store of a later round with it.
	Store string
	Last  Change
	notes []string // every change since TakeNotes, for the log
	tally tally    // counts' cache, cleared by put and drop
	// nextScan is when a member may first be silent past the grace: Tick
	// looks for silent members only from then (zero: at once).
	nextScan time.Time
}

// tally is what counts counted; ok is false until it counted.
type tally struct {
	participants, waiting int
	ok                    bool
}

// View is what a node learns of a run.
type View struct {
	Round        int
	Complete     bool
	Closed       bool
	Participant  bool // the node is a participant of the round
	Queued       bool // the node waits for the next round
	Rank, World  int  // once Complete, for a participant; else -1, 0
	Participants int
	Waiting      int // nodes waiting for the next round
	Deadline     time.Time
	Store        string // the round's store, once its rank 0 published it
}

// Clone returns a copy of r that shares nothing with it.
func (r Run) Clone() Run {
	r.Members = maps.Clone(r.Members)
	r.notes = nil
	return r
}

// TakeNotes returns what changed since it was last called, in order: a
// call may change a run more than once (a join that completes a round),
// and Last holds only the last.
func (r *Run) TakeNotes() []string {
	notes := r.notes
	r.notes = nil
	return notes
}

// Refresh counts every member's heartbeat from now: a master that takes
// the run over gives each a whole grace.
func (r *Run) Refresh(now time.Time) {
	for name, m := range r.Members {
		m.Seen = now
		r.Members[name] = m
	}
}

// View returns what node learns of r.
func (r *Run) View(node string) View {
	v := View{Round: r.Round, Complete: r.Complete, Closed: r.Closed, Rank: -1, Deadline: r.Deadline, Store: r.Store}
	v.Participants, v.Waiting = r.counts()
	m, ok := r.Members[node]
	v.Participant, v.Queued = ok && !m.Waiting, ok && m.Waiting
	if v.Participant && r.Complete {
		v.Rank, v.World = m.Rank, v.Participants
	}
	return v
}

// Join has node leave the round it took part in, if any, and join the
// round being formed, or wait for the next while one is complete; a full
// complete round leaves it out until it ends. cfg must be the run's. A
// run that is Over begins anew, at the next round. attempt numbers the
// agent's Joins (wire.RendezvousJoin.Attempt, from 1; 0: none): a Join
// of a member under its token and attempt is a retry of one already
// applied, whose reply was lost, and changes nothing but its heartbeat.
// Without it, a retry reaching the master after the round completed
// would take the node out of the round its agent is about to train in.
func (r *Run) Join(now time.Time, node, token string, attempt int64, cfg Config) error {
	if m, ok := r.Members[node]; ok && attempt != 0 && m.Attempt == attempt && m.Token == token && !r.Closed {
		m.Seen = now
		r.Members[node] = m
		return nil
	}
	if r.Over(now) {
		was := r.Last
		*r = Run{Round: r.Round + 1, Members: map[string]Member{}}
		r.change(now, "begins anew at round %d: it was closed %v ago (%s), and none of its nodes calls any more", r.Round, now.Sub(was.At).Round(time.Second), strings.TrimPrefix(was.Why, "closed: "))
	}
	if err := r.admit(now, node, token); err != nil {
		return err
	}
	if err := cfg.Check(); err != nil {
		return err
	}
	if len(r.Members) > 0 && cfg != r.Config {
		return wire.WithKind(ErrBadJoin, errors.Errorf("node %s joins with %s; the run was joined with %s", node, cfg, r.Config))
	}
	if len(r.Members) == 0 {
		r.Config = cfg
	}
	if m, ok := r.Members[node]; ok && !m.Waiting {
		r.remove(now, node)
	}
	if r.Members == nil {
		r.Members = map[string]Member{}
	}
	participants, waiting := r.counts()
	switch {
	case r.Complete && participants >= r.Config.MaxNodes:
		r.drop(node) // not waiting: the round's agents would restart for nothing
		r.change(now, "node %s finds round %d full (%d nodes): it joins again once the round is over", node, r.Round, participants)
	case r.Complete:
		if _, ok := r.Members[node]; !ok && waiting >= MaxNodes {
			return wire.WithKind(ErrFull, errors.Errorf("%d nodes wait for round %d of the run already", waiting, r.Round+1))
		}
		r.put(node, Member{Token: token, Rank: -1, Waiting: true, Seen: now, Attempt: attempt})
		r.change(now, "node %s waits for round %d", node, r.Round+1)
	default:
		r.put(node, Member{Token: token, Rank: -1, Seen: now, Attempt: attempt})
		r.change(now, "node %s joined round %d (%d nodes, %d to %d wanted)", node, r.Round, participants+1, r.Config.MinNodes, r.Config.MaxNodes)
		r.formed(now)
	}
	return nil
}

// Over reports whether r is closed and each of its nodes silent past the
// grace: no agent waits on it any more, so that a join begins the run
// anew (torchrun's default run ID, "none", is every job's) and a master
// short of room for another run may drop it.
func (r *Run) Over(now time.Time) bool {
	if !r.Closed {
		return false
	}
	for _, m := range r.Members {
		if now.Sub(m.Seen) <= r.Config.Grace {
			return false
		}
	}
	return true
}

// Poll records the heartbeat of node, if it is a member, and moves the
// run on (Tick). A node that is not (dropped, or left out of a full
// round) learns so from the view, and joins again.
func (r *Run) Poll(now time.Time, node, token string) (View, error) {
	if err := r.admit(now, node, token); err != nil && !errors.Is(err, ErrClosed) {
		return View{}, err
	}
	if m, ok := r.Members[node]; ok {
		m.Seen = now
		r.Members[node] = m
	}
	r.Tick(now)
	return r.View(node), nil
}

// Tick drops the nodes silent for the Grace and completes a round whose
// last call is over; it reports whether the run changed. A closed run
// stays as it was closed.
func (r *Run) Tick(now time.Time) bool {
	if r.Closed {
		return false
	}
	changed := false
	if now.After(r.nextScan) {
		var earliest time.Time // the oldest heartbeat of the members left
		for _, node := range slices.Sorted(maps.Keys(r.Members)) {
			m := r.Members[node]
			if now.Sub(m.Seen) > r.Config.Grace {
				r.remove(now, node)
				r.change(now, "node %s dropped: no heartbeat for %v (grace %v)", node, now.Sub(m.Seen).Round(time.Millisecond), r.Config.Grace)
				changed = true
			} else if earliest.IsZero() || m.Seen.Before(earliest) {
				earliest = m.Seen
			}
		}
		// Heartbeats only move Seen on, and joins come with now: no member
		// is silent past the grace before this.
		r.nextScan = earliest.Add(r.Config.Grace)
	}
	if r.lastCallOver(now) {
		r.complete(now, fmt.Sprintf("its last call of %v is over", r.Config.LastCall))
		changed = true
	}
	return changed
}

// Due reports whether Tick may change r at now: a last call over, or a
// member that may be silent past the grace. A poll of a run not due only
// renews its node's heartbeat, which a master need not store.
func (r *Run) Due(now time.Time) bool {
	return !r.Closed && (now.After(r.nextScan) || r.lastCallOver(now))
}

func (r *Run) lastCallOver(now time.Time) bool {
	participants, _ := r.counts()
	return !r.Complete && participants >= r.Config.MinNodes && participants > 0 && !now.Before(r.Deadline)
}

// Publish records addr as the store of the complete round, hosted by node,
// its rank 0.
func (r *Run) Publish(now time.Time, node, token, addr string) error {
	if err := r.admit(now, node, token); err != nil && !errors.Is(err, ErrClosed) {
		return err
	}
	m, ok := r.Members[node]
	switch {
	case addr == "" || len(addr) > MaxNameBytes:
		return wire.WithKind(ErrBadJoin, errors.Errorf("a store address takes 1 to %d bytes; got %d", MaxNameBytes, len(addr)))
	case !r.Complete || !ok || m.Waiting || m.Rank != 0:
		return wire.WithKind(ErrBadJoin, errors.Errorf("node %s is not rank 0 of a complete round %d: only that node hosts the round's store", node, r.Round))
	case r.Store == addr:
		return nil
	}
	r.Store = addr
	r.change(now, "node %s, rank 0 of round %d, hosts its store at %s", node, r.Round, addr)
	return nil
}

// Close closes the run: no more joins.
func (r *Run) Close(now time.Time, why string) bool {
	if r.Closed {
		return false
	}
	r.Closed = true
	r.change(now, "closed: %s", why)
	return true
}

// admit refuses a call a node may not make: to a closed run, with a bad
// name or token, or under a token other than the one of the node's live
// membership.
func (r *Run) admit(now time.Time, node, token string) error {
	switch {
	case node == "" || len(node) > MaxNameBytes || token == "" || len(token) > MaxNameBytes:
		return wire.WithKind(ErrBadJoin, errors.Errorf("a node's name and token take 1 to %d bytes; got %d and %d", MaxNameBytes, len(node), len(token)))
	case r.Closed:
		return wire.WithKind(ErrClosed, errors.Errorf("the run is closed (%s)", r.Last.Why))
	}
	if m, ok := r.Members[node]; ok && m.Token != token && now.Sub(m.Seen) <= r.Config.Grace {
		return wire.WithKind(ErrIdentity, errors.Errorf("node %s is in the run under another token, seen %v ago", node, now.Sub(m.Seen).Round(time.Millisecond)))
	}
	return nil
}

// remove takes node out of the run: a participant leaving a complete
// round ends it once none is left, and the nodes waiting form the next;
// one leaving a round being formed below MinNodes stops its last call.
func (r *Run) remove(now time.Time, node string) {
	m, ok := r.Members[node]
	r.drop(node)
	if !ok || m.Waiting {
		return
	}
	participants, _ := r.counts()
	switch {
	case r.Complete && participants == 0:
		r.Complete, r.Store = false, ""
		r.Round++
		for name, w := range r.Members {
			w.Waiting = false
			r.put(name, w)
		}
		r.formed(now)
	case !r.Complete && participants < r.Config.MinNodes:
		r.Deadline = time.Time{}
	}
}

// formed starts the last call of a round being formed that has MinNodes,
// or completes it at MaxNodes.
func (r *Run) formed(now time.Time) {
	participants, _ := r.counts()
	switch {
	case participants >= r.Config.MaxNodes:
		r.complete(now, "it has the most nodes")
	case participants >= r.Config.MinNodes && r.Deadline.IsZero():
		r.Deadline = now.Add(r.Config.LastCall)
	}
}

// complete marks the round complete, ranking its participants by name.
func (r *Run) complete(now time.Time, why string) {
	r.Complete, r.Deadline = true, time.Time{}
	var names []string
	for name, m := range r.Members {
		if !m.Waiting {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for rank, name := range names {
		m := r.Members[name]
		m.Rank = rank
		r.put(name, m)
	}
	r.change(now, "round %d complete with %d nodes: %s", r.Round, len(names), why)
}

// counts returns the participants and the nodes waiting, counted once
// after each change of members: a poll of a round of thousands of nodes
// does not count them again.
func (r *Run) counts() (participants, waiting int) {
	if !r.tally.ok {
		r.tally = tally{ok: true}
		for _, m := range r.Members {
			if m.Waiting {
				r.tally.waiting++
			} else {
				r.tally.participants++
			}
		}
	}
	return r.tally.participants, r.tally.waiting
}

// put and drop change the members; a heartbeat, which changes only a
// member's Seen, writes it in place.
func (r *Run) put(name string, m Member) {
	if r.Members == nil {
		r.Members = map[string]Member{}
	}
	r.Members[name] = m
	r.tally = tally{}
}

func (r *Run) drop(name string) {
	delete(r.Members, name)
	r.tally = tally{}
}

func (r *Run) change(now time.Time, format string, args ...any) {
	r.Last = Change{At: now, Why: fmt.Sprintf(format, args...)}
	r.notes = append(r.notes, r.Last.Why)
}

func (c Config) String() string {
	return fmt.Sprintf("nodes %d:%d, last call %v, grace %v", c.MinNodes, c.MaxNodes, c.LastCall, c.Grace)
}
