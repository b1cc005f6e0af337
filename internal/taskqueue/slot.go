package taskqueue

import "time"

// slot is how Queues hold a task's Entry: under half its size and free of
// pointers, so a million tasks take 40 MB that the garbage collector never
// scans. Failure reasons, which few tasks have, are kept in a map beside.
type slot struct {
	seq        int64
	dispatched int64 // Unix nanoseconds; 0 is the zero time
	deadline   int64
	pass       int32 // -1: untouched since the queues were made
	epoch      int32
	timeouts   int32
	queue      Queue
	depth      uint8 // Pending: the tasks its trainer held when it was dispatched (holders.go)
	// restored: Pending since a restore, which set its dispatch time to
	// the restore's: how long it takes tells nothing of a task's duration.
	restored bool
}

func toSlot(e Entry) slot {
	return slot{seq: e.Seq, dispatched: nanos(e.Dispatched), deadline: nanos(e.Deadline),
		pass: int32(e.Pass), epoch: int32(e.Epoch), timeouts: int32(e.Timeouts), queue: e.Queue}
}

func (s slot) entry(reason string) Entry {
	return Entry{Pass: int(s.pass), Queue: s.queue, Epoch: int(s.epoch), Timeouts: int(s.timeouts), Seq: s.seq,
		Dispatched: fromNanos(s.dispatched), Deadline: fromNanos(s.deadline), Error: reason}
}

func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}
