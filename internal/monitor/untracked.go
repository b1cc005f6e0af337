package monitor

import (
	"container/list"
	"time"
)

// untracked counts the trainers that called but are not tracked for want
// of room, until ForgetAfter after their last call (when a tracked one
// would be forgotten). It remembers the names of the latest max of them,
// so that one that comes back is no longer counted; beyond those, it
// counts the others until the latest of their calls is ForgetAfter old: a
// name among those that comes back is counted twice until then.
type untracked struct {
	max      int
	names    map[string]*list.Element // of leftOut
	order    *list.List               // of leftOut, latest left out first
	more     int                      // left out beyond the names remembered
	moreSeen time.Time                // the latest call of those
}

// leftOut is a trainer not tracked, and when it last called.
type leftOut struct {
	name     string
	lastSeen time.Time
}

func newUntracked(max int) untracked {
	return untracked{max: max, names: map[string]*list.Element{}, order: list.New()}
}

// count returns how many trainers are not tracked.
func (u *untracked) count() int { return len(u.names) + u.more }

// add counts the trainer called name, last seen at, as not tracked.
func (u *untracked) add(name string, at time.Time) {
	if e, ok := u.names[name]; ok {
		e.Value = leftOut{name: name, lastSeen: at}
		u.order.MoveToFront(e)
		return
	}
	u.names[name] = u.order.PushFront(leftOut{name: name, lastSeen: at})
	if len(u.names) > u.max {
		oldest := u.order.Remove(u.order.Back()).(leftOut)
		delete(u.names, oldest.name)
		u.more++
		if oldest.lastSeen.After(u.moreSeen) {
			u.moreSeen = oldest.lastSeen
		}
	}
}

// remove stops counting the trainer called name: it is tracked again.
func (u *untracked) remove(name string) {
	if e, ok := u.names[name]; ok {
		u.order.Remove(e)
		delete(u.names, name)
	}
}

// forget stops counting the trainers not seen since before cutoff.
func (u *untracked) forget(cutoff time.Time) {
	for e := u.order.Front(); e != nil; {
		next := e.Next()
		if l := e.Value.(leftOut); l.lastSeen.Before(cutoff) {
			u.order.Remove(e)
			delete(u.names, l.name)
		}
		e = next
	}
	if u.moreSeen.Before(cutoff) {
		u.more = 0
	}
}
