package master

import (
	"context"

	"github.com/pkg/errors"

	"github.com/trainmaster/master/internal/taskqueue"
)

// An effect is what an operation did to a dataset's state in memory: the
// change to make durable, the events to emit once it is, and the error the
// reply carries then (GetTask's "no task", read off a state that must be
// durable first).
type effect struct {
	change taskqueue.Change
	events []event
	err    error
}

// then is e followed by later: their changes merged, their events in
// order, and later's error, if any, the reply's.
func (e effect) then(later effect) effect {
	e.change = e.change.Merge(later.change)
	e.events = append(e.events, later.events...)
	if later.err != nil {
		e.err = later.err
	}
	return e
}

// errUnchanged is what an operation of a timer returns when it has nothing
// to do: the call ends at once and nothing is logged.
var errUnchanged = errors.New("master: nothing to change")

// durable is the one way an operation makes its change durable. op runs
// under s.mu, changing the state in memory; an op that fails changed
// nothing, and its error is returned at once. Otherwise its change is
// queued for the committer and, with the lock released, the call waits
// until that change and every change made before it are durable (an empty
// change waits for the newest group, so that a reply read off uncommitted
// state waits for it too); the events are then emitted and the reply
// returned. After a failed commit, every call waiting gets the error.
func durable[R any](s *datasetService, op func() (R, effect, error)) (R, error) {
	reply, g, eff, err := queued(s, op)
	if err == nil {
		err = g.wait()
	}
	if err != nil {
		var zero R
		return zero, err
	}
	s.emit(eff.events)
	return reply, eff.err
}

// queued runs op under s.mu and queues its change; it returns the group to
// wait for.
func queued[R any](s *datasetService, op func() (R, effect, error)) (R, *group, effect, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	reply, eff, err := op()
	if err != nil {
		return reply, nil, effect{}, err
	}
	return reply, s.queue(eff.change), eff, nil
}

// A group is a run of queue changes committed to the Store together, in one
// call: the changes made while a commit is in flight travel together in the
// next, up to the group's limits (groupLimit). Groups are committed one at
// a time, in the order the changes were made, so a group becomes durable
// only after every change it was built on.
type group struct {
	batch taskqueue.Batch
	bytes int           // the batch's entries, as groupLimit counts them
	round int           // the dataset's round after the group's last change
	done  chan struct{} // closed once err is set
	err   error
}

func newGroup() *group { return &group{done: make(chan struct{})} }

func (g *group) finish(err error) {
	g.err = err
	close(g.done)
}

// wait blocks until the group is committed or failed. A nil group is a
// reply that depends on nothing uncommitted.
func (g *group) wait() error {
	if g == nil {
		return nil
	}
	<-g.done
	return g.err
}

// queue adds a change to the groups awaiting the committer, starting the
// committer if it is not running, and returns the group to wait for.
// Called with s.mu held.
func (s *datasetService) queue(ch taskqueue.Change) *group {
	g := s.enqueue(ch)
	s.rearm()
	if g != nil && !s.committing {
		s.committing = true
		go s.commitGroups()
	}
	return g
}

// enqueue adds a change to the open group, starting a new group when the
// change would take the open one past its limits or the committer already
// took it, and returns the group to wait for: for an empty change, the
// newest group (nil: none is in flight). Called with s.mu held.
func (s *datasetService) enqueue(ch taskqueue.Change) *group {
	if ch.Empty() {
		return s.newest
	}
	n := len(s.groups)
	var grow, added int
	if n > 0 {
		grow, added = s.limit.growth(&s.groups[n-1].batch, ch)
	}
	if n == 0 || !s.limit.admits(s.groups[n-1], grow, added) {
		s.groups = append(s.groups, newGroup())
		n++
		grow, added = s.limit.growth(&s.groups[n-1].batch, ch)
	}
	g := s.groups[n-1]
	g.batch.Add(ch)
	g.bytes += grow
	s.waiting += added
	g.round = s.round
	s.newest = g
	return g
}

// groupLimit bounds a group: its entries, and, when size is set, their
// bytes (GroupLimiter).
type groupLimit struct {
	records, bytes int
	size           func(taskqueue.Record) int
}

// groupLimitOf is the limit of the groups of a dataset kept in store.
func groupLimitOf(cfg Config, store Store) groupLimit {
	l := groupLimit{records: DefaultGroupRecords}
	if gl, ok := store.(GroupLimiter); ok {
		l.records, l.bytes = gl.GroupLimits()
		l.size = gl.RecordBytes
	}
	if cfg.GroupRecords > 0 {
		l.records = min(l.records, cfg.GroupRecords)
	}
	return l
}

// growth returns what ch adds to batch: bytes, and entries of tasks the
// batch does not hold yet.
func (l groupLimit) growth(batch *taskqueue.Batch, ch taskqueue.Change) (grow, added int) {
	for _, r := range ch.Records {
		old, held := batch.Lookup(r.Index)
		if !held {
			added++
		}
		if l.size != nil {
			grow += l.size(r)
			if held {
				grow -= l.size(old)
			}
		}
	}
	return grow, added
}

// admits reports whether g may take a change that grows it so; an empty
// group takes any change, however large.
func (l groupLimit) admits(g *group, grow, added int) bool {
	n := len(g.batch.Records)
	return n == 0 || n+added <= l.records && (l.size == nil || g.bytes+grow <= l.bytes)
}

// commitGroups is the dataset's committer, the one goroutine that commits
// its groups: it runs while groups are queued, commits them in order, one
// at a time, and answers each group's callers.
func (s *datasetService) commitGroups() {
	for g := s.takeGroup(); g != nil; g = s.takeGroup() {
		s.committed(g, s.storeCommit(g))
	}
}

// takeGroup returns the oldest queued group, or nil when none is left; the
// committer then stops.
func (s *datasetService) takeGroup() *group {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.groups) == 0 {
		s.newest, s.committing = nil, false
		return nil
	}
	next := s.groups[0]
	s.groups = s.groups[1:]
	s.inFlight = true
	return next
}

// committed answers a group's callers with the outcome of its commit.
// After a failed commit every queued group fails too: they were built on
// the change that did not become durable, and the state is reloaded before
// the next operation (or dropped, when leadership was lost).
func (s *datasetService) committed(g *group, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		err = s.storeFailed(err)
		s.failGroups(err)
	}
	s.waiting -= len(g.batch.Records)
	s.inFlight = false
	g.finish(err)
}

// storeCommit commits a group to the Store, within CommitTimeout.
func (s *datasetService) storeCommit(g *group) error {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.CommitTimeout)
	defer cancel()
	start := s.cfg.Clock.Now()
	err := s.cfg.Store.Commit(ctx, g.round, g.batch.Change)
	s.cfg.Observer.Committed(s.cfg.Clock.Now().Sub(start), len(g.batch.Records), err)
	return errors.WithMessage(err, "master: commit queue change")
}

// failGroups fails every queued group: nothing queued will become
// durable. Called with s.mu held.
func (s *datasetService) failGroups(err error) {
	for _, g := range s.groups {
		s.waiting -= len(g.batch.Records)
		g.finish(err)
	}
	s.groups, s.newest = nil, nil
}
