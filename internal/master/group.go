package master

import (
	"context"

	"github.com/pkg/errors"

	"github.com/trainmaster/master/internal/taskqueue"
)

// A group is a run of queue changes committed to the Store together, in one
// call. Operations change the queues under the service's lock, add their
// change to the newest open group and wait for it outside the lock, so that
// changes made while a commit is in flight travel together in the next one.
//
// Groups are committed one at a time, in the order the changes were made.
// A group therefore becomes durable only after every change it was built on,
// and an operation that replies after its group committed never reports
// something a crash could undo.
type group struct {
	change taskqueue.Change
	done   chan struct{} // closed once err is set
	err    error
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

// An op is what an operation leaves to do once it has released the lock:
// commit the groups if it is the committer, wait until its group is
// durable, then log what it did.
type op struct {
	g      *group
	commit bool // the caller found no commit in flight and commits
	logs   []func()
}

// queue adds an operation's change to the groups awaiting commit and
// returns what the operation must do once it releases the lock (complete).
// An empty change waits for the newest group, so that a reply read off
// uncommitted state (no task, all done, already finished) still waits for
// that state to be durable. Called with s.mu held.
func (s *datasetService) queue(ch taskqueue.Change, logs ...func()) op {
	ch.Round = s.round
	o := op{g: s.enqueue(ch), logs: logs}
	s.rearm()
	if o.g != nil && !s.committing {
		s.committing, o.commit = true, true
	}
	return o
}

// complete finishes an operation outside the lock: commits the groups up to
// its own when it is the committer, waits for its group, and logs once it
// is durable.
func (s *datasetService) complete(o op) error {
	if o.commit {
		s.commitThrough(o.g)
	}
	if err := o.g.wait(); err != nil {
		return err
	}
	for _, log := range o.logs {
		if log != nil {
			log()
		}
	}
	return nil
}

// enqueue adds a change to the open group, starting a new group when the
// open one is full or already taken by the committer, and returns the group
// to wait for. Called with s.mu held.
func (s *datasetService) enqueue(ch taskqueue.Change) *group {
	if ch.Empty() {
		return s.newest
	}
	n := len(s.groups)
	if n == 0 || len(s.groups[n-1].change.Records)+len(ch.Records) > s.cfg.GroupRecords {
		s.groups = append(s.groups, newGroup())
		n++
	}
	g := s.groups[n-1]
	g.change = g.change.Merge(ch)
	s.newest = g
	return g
}

// commitThrough commits the queued groups in order until g is committed
// (all of them when g is nil); only the committer calls it, with the lock
// released. A caller that finds no commit in flight commits its own group
// this way, sparing a hand-off to another goroutine when calls do not
// overlap; the groups queued behind its own are left to a goroutine.
//
// After a failed commit every queued group fails too: they were built on
// the change that did not become durable, and the state is reloaded before
// the next operation (or dropped, when leadership was lost).
func (s *datasetService) commitThrough(g *group) {
	for {
		next := s.takeGroup()
		if next == nil {
			return
		}
		err := s.storeCommit(next.change)
		if !s.committed(next, err) || next == g {
			break
		}
	}
	if s.handOff() {
		go s.commitThrough(nil)
	}
}

// takeGroup returns the oldest queued group, or nil when none is left; the
// committer then stops being one.
func (s *datasetService) takeGroup() *group {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.groups) == 0 {
		s.stopCommitting()
		return nil
	}
	next := s.groups[0]
	s.groups = s.groups[1:]
	return next
}

// committed records the outcome of a group's commit and reports whether it
// succeeded.
func (s *datasetService) committed(g *group, err error) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		err = s.storeFailed(err)
		g.finish(err)
		s.failGroups(err)
		return false
	}
	g.finish(nil)
	return true
}

// handOff reports whether groups are left for a goroutine to commit; if not,
// the committer stops being one.
func (s *datasetService) handOff() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.groups) > 0 {
		return true
	}
	s.stopCommitting()
	return false
}

// stopCommitting ends the committer's turn: everything queued is committed
// or failed, so nothing is waiting to become durable. Called with s.mu held.
func (s *datasetService) stopCommitting() {
	s.newest = nil
	s.committing = false
}

func (s *datasetService) storeCommit(ch taskqueue.Change) error {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.CommitTimeout)
	defer cancel()
	start := s.cfg.Clock.Now()
	err := s.cfg.Store.Commit(ctx, ch)
	s.cfg.Observer.Committed(s.cfg.Clock.Now().Sub(start), len(ch.Records), err)
	return errors.WithMessage(err, "master: commit queue change")
}

// failGroups fails every queued group. Called with s.mu held.
func (s *datasetService) failGroups(err error) {
	for _, g := range s.groups {
		g.finish(err)
	}
	s.groups = nil
}
