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

// enqueue adds a change to the open group, starting a new group when the
// open one is full or already taken by the committer, and returns the group
// to wait for. An empty change returns the newest group, so that a reply
// read off uncommitted state (no task, all done, already finished) still
// waits for that state to be durable. Called with s.mu held.
func (s *Service) enqueue(ch taskqueue.Change) *group {
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
// (all of them when g is nil); the caller must have set s.committing. It
// is called with s.mu held and releases it during each Store call. A
// caller that finds no commit in flight commits its own group this way,
// sparing a hand-off to another goroutine when calls do not overlap; the
// groups queued behind its own are left to a goroutine.
//
// After a failed commit every queued group fails too: they were built on
// the change that did not become durable, and the state is reloaded before
// the next operation (or dropped, when leadership was lost).
func (s *Service) commitThrough(g *group) {
	for len(s.groups) > 0 {
		next := s.groups[0]
		s.groups = s.groups[1:]
		s.mu.Unlock()
		err := s.storeCommit(next.change)
		s.mu.Lock()
		if err != nil {
			err = s.storeFailed(err)
			next.finish(err)
			s.failGroups(err)
			break
		}
		next.finish(nil)
		if next == g {
			break
		}
	}
	if len(s.groups) > 0 {
		go s.commitGroups()
		return
	}
	s.newest = nil // committed or failed: nothing is waiting to become durable
	s.committing = false
}

// commitGroups commits every queued group, from its own goroutine.
func (s *Service) commitGroups() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.commitThrough(nil)
}

func (s *Service) storeCommit(ch taskqueue.Change) error {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.CommitTimeout)
	defer cancel()
	return errors.Wrap(s.cfg.Store.Commit(ctx, ch), "master: commit queue change")
}

// failGroups fails every queued group. Called with s.mu held.
func (s *Service) failGroups(err error) {
	for _, g := range s.groups {
		g.finish(err)
	}
	s.groups = nil
}
