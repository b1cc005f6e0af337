package masterbench

import "time"

// schedule is when one paced trainer calls GetTask: once per period, at a
// phase of its own, from start. Slot k is its kth call.
type schedule struct {
	start  time.Time
	phase  time.Duration
	period time.Duration
}

// scheduleOf spreads n trainers' phases evenly over the period, so that
// together they call n/period times a second instead of in bursts:
// trainer i calls at i/n of the period.
func scheduleOf(i, n int, start time.Time, period time.Duration) schedule {
	return schedule{start: start, phase: time.Duration(int64(period) * int64(i) / int64(n)), period: period}
}

// at is the time of slot k.
func (s schedule) at(k int) time.Time {
	return s.start.Add(s.phase + time.Duration(k)*s.period)
}

// next returns the slot of the call after slot k, given that the trainer's
// previous call returned at returned. The call is late when its slot's
// time had passed by then: it goes at once, and the slots it missed are
// dropped rather than piled up, so that it stands for the last slot
// already due and the call after it keeps to the schedule.
func (s schedule) next(k int, returned time.Time) (slot int, late bool) {
	slot = k + 1
	if !returned.After(s.at(slot)) {
		return slot, false
	}
	due := int(returned.Sub(s.start.Add(s.phase)) / s.period) // the last slot due by then
	return max(slot, due), true
}
