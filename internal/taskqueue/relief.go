package taskqueue

import (
	"cmp"
	"iter"
	"math"
	"slices"
	"time"

	"github.com/trainmaster/master/go/wire"
)

// pendingDispatch is what the straggler policy sees of a pending dispatch.
type pendingDispatch struct {
	task, epoch int
	holder      string        // its trainer ("" for an unnamed one)
	dispatched  time.Time     // when it was handed out
	started     time.Time     // when its trainer started on it: its dispatch, or a later finish it waited behind
	depth       int           // the tasks its trainer held when it was dispatched
	end         int64         // the position past its last record
	mark        progressMark  // its progress (mark.from: where the dispatch started)
	interval    time.Duration // how often its trainer reports progress; 0: it does not
}

// reliefState is what the straggler policy sees of the queues when a
// trainer asks and Todo has nothing for it.
type reliefState struct {
	asker    string                    // the trainer that asks
	todo     int                       // tasks in Todo
	full     bool                      // the pass has had its MaxPieces reliefs
	averaged bool                      // the moving average has its MinSamples
	mean     float64                   // the moving average, seconds per record
	pending  iter.Seq[pendingDispatch] // the pending dispatches, each once
}

// straggler is a pending dispatch that has run past StragglerFactor times
// its expected time.
type straggler struct {
	pendingDispatch
	overdue float64
	waiting bool // not started: it waits behind another task its trainer holds
}

// decide is the straggler policy s: what to do for st's asker, as a
// Relief (split the most overdue straggler it can at Relief.Cut, or back
// it up), or false for nothing. It reads st only, and changes nothing.
func (s Stragglers) decide(now time.Time, st reliefState) (Relief, bool) {
	if s == StragglersOff || !tracked(st.asker) || st.todo > 0 || st.full || !st.averaged {
		return Relief{}, false
	}
	for _, d := range stragglers(now, st) {
		r := Relief{Kind: StragglersBackup, Task: d.task, Epoch: d.epoch, Holder: d.holder, Overdue: d.overdue}
		heard := d.started
		if d.mark.at != 0 {
			heard = fromNanos(d.mark.at)
		}
		if s == StragglersSplit && !d.waiting && !silent(d.interval, heard, now) {
			if d.mark.at == 0 || d.mark.cut {
				continue // it will report (its first since it started, or the one that learns its cut), and be split then
			}
			cut, ok := cutAt(d.pendingDispatch, st.mean, now)
			if !ok {
				continue // it will be done before a piece would
			}
			r.Kind, r.Reached, r.Cut = StragglersSplit, d.mark.done, cut
		}
		return r, true
	}
	return Relief{}, false
}

// stragglers returns the pending dispatches not held by st's asker that
// have run past StragglerFactor times their expected time, most overdue
// first.
func stragglers(now time.Time, st reliefState) []straggler {
	var out []straggler
	for d := range st.pending {
		if d.holder == st.asker {
			continue
		}
		expected := st.mean * float64(max(d.end-int64(d.mark.from), 1))
		waiting := d.depth > 0 && !d.started.After(d.dispatched)
		if waiting {
			expected *= float64(1 + d.depth) // it waits behind the tasks its trainer held
		}
		ran := now.Sub(d.started)
		if overdue := ran.Seconds() / expected; overdue > StragglerFactor && ran >= StragglerMin {
			out = append(out, straggler{pendingDispatch: d, overdue: overdue, waiting: waiting})
		}
	}
	slices.SortFunc(out, func(a, b straggler) int {
		return cmp.Or(cmp.Compare(b.overdue, a.overdue), cmp.Compare(a.task, b.task))
	})
	return out
}

// silent says whether a dispatch last heard of at last (its last report,
// or its start), whose trainer reports progress every interval (0: never),
// is silent at now: its trainer does not report progress, or has not for
// twice its interval (and a second): it stalled.
func silent(interval time.Duration, last, now time.Time) bool {
	return interval == 0 || now.Sub(last) > 2*interval+wire.MinProgressInterval
}

// cutAt returns where to cut the rest of a dispatch that reported
// progress, given the moving average mean (seconds per record), or false
// when the piece would be empty: the holder will be done before the piece
// would.
func cutAt(d pendingDispatch, mean float64, now time.Time) (int, bool) {
	pm, end := d.mark, d.end
	if end > math.MaxInt32 {
		return 0, false // past what an entry stores
	}
	at := fromNanos(pm.at)
	rate := 0.0 // the holder's records per second
	if took := at.Sub(d.started).Seconds(); took > 0 && pm.done > pm.from {
		rate = float64(pm.done-pm.from) / took
	}
	gap := at.Sub(d.started)
	if pm.prev != 0 {
		gap = at.Sub(fromNanos(pm.prev))
	}
	gap = max(gap, wire.MinProgressInterval)
	next := at.Add(gap) // when the holder reports next, and learns its end
	if next.Before(now) {
		next = now.Add(gap)
	}
	reach := float64(pm.done) + rate*next.Sub(at).Seconds()*cutMargin + 1
	here := float64(pm.done) + rate*now.Sub(at).Seconds()
	fast := 1 / max(mean, 1e-9)
	together := here + (float64(end)-here)*rate/(rate+fast)
	cut := math.Ceil(max(reach, together))
	if cut >= float64(end) {
		return 0, false
	}
	return int(cut), true
}
