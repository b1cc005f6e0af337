package monitor

import (
	"time"

	"github.com/trainmaster/master/internal/statusapi"
)

// window sums amounts over the last len(sums) slots of a fixed width: a
// ring that remembers the newest slot it counted, and clears the slots it
// moves past, so that nothing has to tick to age them out.
type window struct {
	width time.Duration
	last  int64   // the newest slot of time counted (t / width)
	sums  []int64 // slot id's sum at id % len(sums), for last-len(sums) < id <= last
}

func newWindow(width time.Duration, slots int) window {
	return window{width: width, sums: make([]int64, slots)}
}

func (w *window) slot(t time.Time) int64 { return t.UnixNano() / int64(w.width) }

// add counts v at t; an amount older than the ring is not counted.
func (w *window) add(t time.Time, v int64) {
	id, n := w.slot(t), int64(len(w.sums))
	switch {
	case id > w.last:
		for s := max(w.last+1, id-n+1); s <= id; s++ {
			w.sums[s%n] = 0
		}
		w.last = id
	case id <= w.last-n:
		return
	}
	w.sums[id%n] += v
}

// at returns the sum of the slot id, 0 when the ring does not hold it.
func (w *window) at(id int64) int64 {
	n := int64(len(w.sums))
	if id > w.last || id <= w.last-n {
		return 0
	}
	return w.sums[id%n]
}

// rate is the amount per second over the last span before now, or since
// from when that is later (a trainer seen 5 s ago is not averaged over a
// minute); span is rounded to whole slots.
func (w *window) rate(now, from time.Time, span time.Duration) float64 {
	last := w.slot(now)
	n := min(int64(span/w.width), int64(len(w.sums)))
	first := last - n + 1
	start := time.Unix(0, first*int64(w.width))
	if from.After(start) {
		start = from
	}
	secs := now.Sub(start).Seconds()
	if secs < 1 {
		secs = 1 // a burst in the first second is not a rate of thousands
	}
	var sum int64
	for id := first; id <= last; id++ {
		sum += w.at(id)
	}
	return float64(sum) / secs
}

// series returns the per-second rate of every whole slot the ring holds
// before now and after from, oldest first, with the time each slot ends.
func (w *window) series(now, from time.Time) []statusapi.RatePoint {
	last := w.slot(now) - 1 // the current slot is not over
	first := max(last-int64(len(w.sums))+2, w.slot(from)+1)
	out := make([]statusapi.RatePoint, 0, len(w.sums))
	for id := first; id <= last; id++ {
		out = append(out, statusapi.RatePoint{
			Time:             time.Unix(0, (id+1)*int64(w.width)).UTC(),
			RecordsPerSecond: float64(w.at(id)) / w.width.Seconds(),
		})
	}
	return out
}
