package monitor

import (
	"cmp"
	"container/heap"
	"slices"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/trainmaster/master/internal/statusapi"
)

// What the status and the metrics read of the trainers at a moment: each
// trainer's standing (connected, stalled), the counts of every trainer
// tracked, the distributions of their rates and of how long they have
// held their tasks, and the few the page shows. One walk over the table,
// with no copy and no sort of every trainer (BenchmarkScrape).

// moment is what a trainer's standing depends on besides its record.
type moment struct {
	now time.Time
	// stallAfter is the silence past which a trainer is stalled.
	stallAfter time.Duration
	// conns are the named trainers with a connection open to the leading
	// master (JobSource.ConnectedTrainers); nil on a standby.
	conns map[string]int
	// pass is train's current pass, the one a trainer's pass figures
	// count: -1 while no job is known (each trainer's latest then).
	pass    int
	running bool // a dataset of the job is not done: only then is a trainer stalled
}

// standing is what a trainer is at a moment.
type standing struct {
	// connected: it has a connection open to the master.
	connected bool
	// stalled, while the job runs: it has been silent for longer than
	// stallAfter, or a task it held timed out or was taken back as lost
	// since its last call.
	stalled bool
}

// of returns t's standing at the moment.
func (mo moment) of(t *trainer) standing {
	silence := mo.now.Sub(t.lastSeen)
	return standing{
		connected: mo.conns[t.name] > 0,
		stalled:   mo.running && (t.timedOut || t.lost || silence > mo.stallAfter),
	}
}

// status returns t's figures at the moment, rate its records per second
// (rate).
func (mo moment) status(t *trainer, s standing, rate float64) statusapi.TrainerStatus {
	st := statusapi.TrainerStatus{
		Name: t.name, TasksTotal: t.tasksTotal, RecordsTotal: t.recordsTotal,
		RecordsPerSecond: rate, Holding: len(t.held), Failures: t.failures, Timeouts: t.timeouts,
		LastSeen: t.lastSeen.UTC(), Stalled: s.stalled, Connected: s.connected, Lost: t.lost,
	}
	if mo.pass < 0 || t.pass == mo.pass {
		st.TasksPass, st.RecordsPass = t.tasksPass, t.recordsPass
	}
	if h, ok := t.oldest(); ok {
		st.Task = &statusapi.HeldTask{Dataset: h.task.dataset, Index: h.task.index, Pass: h.pass, Since: h.since.UTC(),
			HeldSeconds: mo.now.Sub(h.since).Seconds()}
	}
	return st
}

// rate is t's records per second over the last minute.
func (mo moment) rate(t *trainer) float64 { return t.rate.rate(mo.now, t.firstSeen, rateSpan) }

// census counts the trainers at a moment: connected, every named trainer
// with a connection open, tracked or not; the others, the trainers
// tracked.
type census struct {
	tracked, connected, stalled int
	rates                       *histogram // records per second of each trainer tracked and connected
	held                        *histogram // seconds each holder has held its oldest task
}

// The buckets of the distributions over trainers (doc/operations.md).
var (
	rateBuckets = []float64{0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 20_000, 50_000, 100_000}
	heldBuckets = []float64{1, 2, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600}
)

// take counts every trainer of ts at the moment, and calls visit, unless
// nil, with each, its standing and its rate.
func (mo moment) take(ts *trainers, visit func(t *trainer, s standing, rate float64)) census {
	c := census{tracked: len(ts.byName), connected: len(mo.conns), rates: newHistogram(rateBuckets), held: newHistogram(heldBuckets)}
	for _, t := range ts.byName {
		s, rate := mo.of(t), mo.rate(t)
		if s.connected {
			c.rates.observe(rate)
		}
		if s.stalled {
			c.stalled++
		}
		if h, ok := t.oldest(); ok {
			c.held.observe(mo.now.Sub(h.since).Seconds())
		}
		if visit != nil {
			visit(t, s, rate)
		}
	}
	return c
}

// The table of the status: every stalled trainer, up to MaxShownStalled,
// then the MaxShownTrainers slowest of the others.
const (
	MaxShownStalled  = 1000
	MaxShownTrainers = 100
)

// table returns the census of ts and the trainers the status shows:
// stalled first (those holding a task first), then slowest first, ties by
// name.
func (mo moment) table(ts *trainers) (census, []statusapi.TrainerStatus) {
	var stalled []ranked
	var slowest fastestFirst
	c := mo.take(ts, func(t *trainer, s standing, rate float64) {
		r := ranked{t: t, s: s, rate: rate}
		if s.stalled {
			stalled = append(stalled, r)
		} else {
			slowest.keep(r, MaxShownTrainers)
		}
	})
	slices.SortFunc(stalled, func(a, b ranked) int {
		return cmp.Or(cmp.Compare(min(len(b.t.held), 1), min(len(a.t.held), 1)), a.compare(b))
	})
	stalled = stalled[:min(len(stalled), MaxShownStalled)]
	slices.SortFunc(slowest, ranked.compare)
	out := make([]statusapi.TrainerStatus, 0, len(stalled)+len(slowest))
	for _, r := range append(stalled, slowest...) {
		out = append(out, mo.status(r.t, r.s, r.rate))
	}
	return c, out
}

// ranked is a trainer, its standing and its rate.
type ranked struct {
	t    *trainer
	s    standing
	rate float64
}

// compare orders ranked trainers slowest first, ties by name.
func (r ranked) compare(o ranked) int {
	return cmp.Or(cmp.Compare(r.rate, o.rate), cmp.Compare(r.t.name, o.t.name))
}

// fastestFirst is a heap of ranked trainers whose root is the fastest:
// keep holds the k slowest of those it is offered, letting the fastest go.
type fastestFirst []ranked

func (h fastestFirst) Len() int           { return len(h) }
func (h fastestFirst) Less(i, j int) bool { return h[i].compare(h[j]) > 0 }
func (h fastestFirst) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *fastestFirst) Push(x any)        { *h = append(*h, x.(ranked)) }
func (h *fastestFirst) Pop() any {
	old := *h
	r := old[len(old)-1]
	*h = old[:len(old)-1]
	return r
}

// keep adds r to the k slowest kept, if it is one of them.
func (h *fastestFirst) keep(r ranked, k int) {
	switch {
	case len(*h) < k:
		heap.Push(h, r)
	case k > 0 && r.compare((*h)[0]) < 0:
		(*h)[0] = r
		heap.Fix(h, 0)
	}
}

// histogram counts observations in buckets, for a constant histogram of
// Prometheus' made at each scrape.
type histogram struct {
	bounds []float64 // upper bounds, ascending
	counts []uint64  // observations in each bucket (not cumulated); one more for +Inf
	sum    float64
	n      uint64
}

func newHistogram(bounds []float64) *histogram {
	return &histogram{bounds: bounds, counts: make([]uint64, len(bounds)+1)}
}

func (h *histogram) observe(v float64) {
	h.counts[sort.SearchFloat64s(h.bounds, v)]++
	h.sum += v
	h.n++
}

// metric returns h as a Prometheus histogram of d.
func (h *histogram) metric(d *prometheus.Desc) prometheus.Metric {
	buckets := make(map[float64]uint64, len(h.bounds))
	var below uint64
	for i, b := range h.bounds {
		below += h.counts[i]
		buckets[b] = below
	}
	return prometheus.MustNewConstHistogram(d, h.n, h.sum, buckets)
}
