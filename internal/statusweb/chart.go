package statusweb

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/trainmaster/master/internal/statusapi"
)

// The rate chart: a viewBox of chartW × chartH, the plot inside margins
// that leave room for the labels.
const (
	chartW, chartH                           = 720, 200
	plotLeft, plotRight, plotTop, plotBottom = 64, 708, 14, 176
	defaultSlot                              = 10 * time.Second
	maxChartSpan                             = 30 * time.Minute
)

// chartView is the chart of records per second.
type chartView struct {
	W, H                     int
	Left, Right, Top, Bottom int
	Mid                      int // y of the middle grid line
	Center                   int // x of the middle of the plot
	Tick                     int // y of the end of the time marks' ticks
	Line, Area               string
	YMax, YMid               string // labels
	Marks                    []chartMark
	Span                     string
	Empty                    bool
}

type chartMark struct {
	X      int
	Label  string
	Anchor string
}

// chartSpans are the spans the chart may cover, each with the step of its
// time marks; it covers the shortest that holds the history, so that a job
// a minute old is not a sliver at the right of half an hour.
var chartSpans = []struct {
	span, step time.Duration
}{{2 * time.Minute, time.Minute}, {5 * time.Minute, time.Minute}, {10 * time.Minute, 2 * time.Minute}, {15 * time.Minute, 5 * time.Minute}, {maxChartSpan, 5 * time.Minute}}

func newChart(rate []statusapi.RatePoint, now time.Time) chartView {
	c := chartView{W: chartW, H: chartH, Left: plotLeft, Right: plotRight, Top: plotTop, Bottom: plotBottom,
		Mid: (plotTop + plotBottom) / 2, Center: (plotLeft + plotRight) / 2, Tick: plotBottom + 4}
	slot := defaultSlot
	if len(rate) >= 2 {
		if d := rate[1].Time.Sub(rate[0].Time); d > 0 {
			slot = d
		}
	}
	covered := time.Duration(0)
	if len(rate) > 0 {
		covered = now.Sub(rate[0].Time.Add(-slot))
	}
	span, step := chartSpans[len(chartSpans)-1].span, chartSpans[len(chartSpans)-1].step
	for _, s := range chartSpans {
		if covered <= s.span {
			span, step = s.span, s.step
			break
		}
	}
	c.Span = dur(span.Seconds())
	start := now.Add(-span)
	x := func(t time.Time) float64 {
		f := t.Sub(start).Seconds() / span.Seconds()
		return plotLeft + math.Max(0, math.Min(1, f))*(plotRight-plotLeft)
	}
	for back := span; back >= 0; back -= step {
		m := chartMark{X: int(math.Round(x(now.Add(-back)))), Label: "−" + dur(back.Seconds()), Anchor: "middle"}
		if back == 0 {
			m.Label, m.Anchor = "now", "end"
		} else if back == span {
			m.Anchor = "start"
		}
		c.Marks = append(c.Marks, m)
	}
	peak := 0.0
	for _, p := range rate {
		if !p.Time.Before(start) {
			peak = math.Max(peak, p.RecordsPerSecond)
		}
	}
	if peak <= 0 {
		c.Empty = true
		return c
	}
	top := niceCeil(peak)
	c.YMax, c.YMid = num(top), num(top/2)
	y := func(r float64) float64 { return plotBottom - r/top*(plotBottom-plotTop) }
	var xs []float64
	var pts []string
	add := func(t time.Time, r float64) {
		xs = append(xs, x(t))
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", xs[len(xs)-1], y(r)))
	}
	for _, p := range rate {
		switch {
		case p.Time.Before(start):
		case len(rate) == 1: // one slot: a segment across it
			add(p.Time.Add(-slot), p.RecordsPerSecond)
			add(p.Time, p.RecordsPerSecond)
		default: // the middle of each slot
			add(p.Time.Add(-slot/2), p.RecordsPerSecond)
		}
	}
	c.Line = strings.Join(pts, " ")
	c.Area = fmt.Sprintf("%.1f,%d %s %.1f,%d", xs[0], plotBottom, c.Line, xs[len(xs)-1], plotBottom)
	return c
}

// niceCeil returns the smallest of 1, 2, 2.5, 5 times a power of ten that
// is at least v > 0.
func niceCeil(v float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= v*(1-1e-9) {
			return m * p
		}
	}
	return 10 * p
}
