package statusweb

import (
	_ "embed"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/trainmaster/master/internal/monitor"
)

// page.html is the status page: html/template, inline CSS and SVG, no
// script and no external asset, so that it works on a cluster with no
// internet. Every string in it that a client chose (trainer names,
// reasons, dataset patterns) goes through html/template's escaping: never
// hand it template.HTML.
//
//go:embed page.html
var pageHTML string

var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{
	"num":  num,
	"dur":  dur,
	"eta":  eta,
	"inc":  func(i int) int { return i + 1 },
	"more": func(i int) int { return i - 1 },
	"pct":  pct,
	"plur": plural,
	// other says whether a task's dataset is worth naming: one but train.
	"other": func(dataset string) bool { return dataset != "" && dataset != defaultDataset },
}).Parse(pageHTML))

// defaultDataset is wire.DefaultDataset: the job's figures are its.
const defaultDataset = "train"

func (s *Server) page(w http.ResponseWriter, r *http.Request) {
	s.writePage(w, r, s.status(r.Context()))
}

// writePage renders st for the request r: links to the other masters'
// pages take r's scheme, and the master whose address r was sent to is
// marked as this page's.
func (s *Server) writePage(w http.ResponseWriter, r *http.Request, st monitor.Status) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if err := pageTemplate.Execute(w, newPageView(st, s.cfg.Refresh, scheme, r.Host)); err != nil {
		s.cfg.Log.WithError(err).Debug("status page: write")
	}
}

// maxPassBars is how many passes get a bar each; a job of more passes
// shows the passes done, the current one and the passes to come as three.
const maxPassBars = 20

// pageView is what page.html renders: the status, and what the template
// would find awkward to compute.
type pageView struct {
	monitor.Status
	Refresh int // seconds
	Title   string
	Masters []masterView // Status.Masters, for the page
	// Leader is the leading master, nil when the lock keys name none.
	Leader    *masterView
	Passes    []passRow
	JobPct    string // the share of the job done, whole percents, 100 only once all is
	Queues    []queueView
	Chart     chartView
	Hidden    int // trainers not shown
	MoreGone  int // discarded tasks not shown
	ShowChart bool
	// Sets are the rows of the datasets table, train first: none when
	// train is the only dataset.
	Sets []setRow
}

// setRow is a dataset of the job, a row of the datasets table.
type setRow struct {
	*monitor.JobStatus
	Kind    string // "8 files in tasks of 10 chunks", "index range of 25 records in tasks of 10"
	Records string // records done this pass, "10 of 25 · 40%"
}

// masterView is a master from the lock keys, with its page's URL.
type masterView struct {
	Host string
	PID  int
	Role string // "leader", "standby 1", ...
	URL  string // its status page; empty when it serves none
	Lead bool
	Here bool // the page being read is its own (the request's host is its HTTP address)
}

// passRow is a bar of the progress: one pass, or a run of passes all done
// or all to come.
type passRow struct {
	Label   string
	State   string // "done", "current" or "todo"
	First   int    // first pass of the row, from 1
	Percent string // width of the bar, "0.00" to "100.00"
	Detail  string
}

// queueView is one queue of the current pass.
type queueView struct {
	Key, Label, Help string
	Count            int
	Percent          string // of the tasks of a pass
}

func newPageView(st monitor.Status, refresh time.Duration, scheme, host string) *pageView {
	v := &pageView{Status: st, Refresh: max(1, int(refresh.Round(time.Second)/time.Second))}
	standbys := 0
	for _, m := range st.Masters {
		mv := masterView{Host: m.Host, PID: m.PID, Lead: m.Leading, Role: "leader", Here: m.HTTP != "" && m.HTTP == host}
		if !m.Leading {
			standbys++
			mv.Role = "standby " + strconv.Itoa(standbys)
		}
		if m.HTTP != "" {
			mv.URL = scheme + "://" + m.HTTP + "/"
		}
		v.Masters = append(v.Masters, mv)
	}
	for i := range v.Masters {
		if v.Masters[i].Lead {
			v.Leader = &v.Masters[i]
			break
		}
	}
	v.Hidden = max(0, st.TrainersTotal-len(st.Trainers))
	v.ShowChart = st.Leading || len(st.Rate) > 0
	v.Chart = newChart(st.Rate, st.Time)
	v.Title = "standing by"
	if st.Leading {
		v.Title = "leading, no dataset yet"
	}
	if j := st.Job; j != nil {
		v.Passes, v.JobPct = passRows(j)
		v.Queues = queues(j)
		v.MoreGone = max(0, j.Failed-len(j.Discarded))
		if j.AllDone {
			v.Title = "all " + plural(j.Passes, "pass", "passes") + " done"
		} else {
			v.Title = fmt.Sprintf("pass %d/%d, %s%%", j.Pass+1, j.Passes, pct(j.RecordsDone, j.Records))
		}
	}
	if len(st.Datasets) > 0 {
		if st.Job != nil {
			v.Sets = append(v.Sets, newSetRow(st.Job))
		}
		for i := range st.Datasets {
			v.Sets = append(v.Sets, newSetRow(&st.Datasets[i]))
		}
	}
	return v
}

func newSetRow(j *monitor.JobStatus) setRow {
	r := setRow{JobStatus: j, Records: fmt.Sprintf("%s of %s · %s%%", num(j.RecordsDone), num(j.Records), pct(j.RecordsDone, j.Records))}
	if j.RecordsPerTask > 0 {
		r.Kind = fmt.Sprintf("index range of %s records in tasks of %s", num(j.Records), num(j.RecordsPerTask))
	} else {
		r.Kind = fmt.Sprintf("%s in tasks of %s", plural(j.Files, "file", "files"), plural(j.ChunksPerTask, "chunk", "chunks"))
	}
	return r
}

// passRows returns the bars of the passes, and the share of the job done.
func passRows(j *monitor.JobStatus) ([]passRow, string) {
	current := 0.0
	if j.Records > 0 {
		current = min(1, float64(j.RecordsDone)/float64(j.Records))
	}
	job := "100"
	if !j.AllDone && j.Passes > 0 {
		job = strconv.Itoa(int(math.Min(99, math.Floor(100*(float64(j.Pass)+current)/float64(j.Passes)))))
	}
	done := func(first, last int) passRow {
		return passRow{Label: passRange(first, last), State: "done", First: first, Percent: "100.00", Detail: "done"}
	}
	todo := func(first, last int) passRow {
		return passRow{Label: passRange(first, last), State: "todo", First: first, Percent: "0.00", Detail: "to come"}
	}
	var rows []passRow
	if j.Passes <= maxPassBars {
		for p := 1; p <= j.Passes; p++ {
			switch {
			case p <= j.Pass:
				rows = append(rows, done(p, p))
			case p == j.Pass+1:
				rows = append(rows, currentRow(j, current))
			default:
				rows = append(rows, todo(p, p))
			}
		}
		return rows, job
	}
	if j.Pass > 0 {
		rows = append(rows, done(1, min(j.Pass, j.Passes)))
	}
	if !j.AllDone && j.Pass < j.Passes {
		rows = append(rows, currentRow(j, current))
		if j.Pass+2 <= j.Passes {
			rows = append(rows, todo(j.Pass+2, j.Passes))
		}
	}
	return rows, job
}

func currentRow(j *monitor.JobStatus, share float64) passRow {
	return passRow{Label: passRange(j.Pass+1, j.Pass+1), State: "current", First: j.Pass + 1,
		Percent: strconv.FormatFloat(100*share, 'f', 2, 64),
		Detail:  fmt.Sprintf("%s of %s records, %s%%", num(j.RecordsDone), num(j.Records), pct(j.RecordsDone, j.Records))}
}

func passRange(first, last int) string {
	if first == last {
		return "Pass " + strconv.Itoa(first)
	}
	return fmt.Sprintf("Passes %d–%d", first, last)
}

func queues(j *monitor.JobStatus) []queueView {
	q := []queueView{
		{Key: "todo", Label: "To do", Help: "waiting for a trainer", Count: j.Todo},
		{Key: "pending", Label: "Pending", Help: "held by a trainer", Count: j.Pending},
		{Key: "done", Label: "Done", Help: "finished this pass", Count: j.Done},
		{Key: "failed", Label: "Failed", Help: "discarded for this pass", Count: j.Failed},
	}
	total := max(j.Tasks, j.Todo+j.Pending+j.Done+j.Failed)
	for i := range q {
		q[i].Percent = "0.00"
		if total > 0 {
			q[i].Percent = strconv.FormatFloat(100*float64(q[i].Count)/float64(total), 'f', 2, 64)
		}
	}
	return q
}

// Ago says how long before the status t was, "3 s ago".
func (v *pageView) Ago(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	d := v.Time.Sub(t)
	if d < time.Second {
		return "just now"
	}
	return dur(d.Seconds()) + " ago"
}

// OtherPass says whether the held task t is not of its dataset's current
// pass.
func (v *pageView) OtherPass(t *monitor.HeldTask) bool {
	if t.Dataset == "" || t.Dataset == defaultDataset {
		return v.Job == nil || t.Pass != v.Job.Pass
	}
	for _, d := range v.Datasets {
		if d.Name == t.Dataset {
			return t.Pass != d.Pass
		}
	}
	return true
}

// Updated is the time of the status, for people anywhere.
func (v *pageView) Updated() string { return v.Time.UTC().Format("2006-01-02 15:04:05 UTC") }

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

func newChart(rate []monitor.RatePoint, now time.Time) chartView {
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

// num writes a count or a rate for people: 1,234,567; a rate under 10
// keeps one decimal.
func num(v any) string {
	switch n := v.(type) {
	case int:
		return group(int64(n))
	case int64:
		return group(n)
	case float64:
		if math.IsNaN(n) || math.IsInf(n, 0) {
			return "–"
		}
		if n != 0 && math.Abs(n) < 10 && math.Round(n) != n {
			return strconv.FormatFloat(n, 'f', 1, 64)
		}
		return group(int64(math.Round(n)))
	}
	return fmt.Sprint(v)
}

func group(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// pct is done as a whole percentage of all, 99 until it is all.
func pct(done, all int64) string {
	if all <= 0 {
		return "0"
	}
	p := math.Floor(100 * float64(done) / float64(all))
	return strconv.Itoa(int(min(100, max(0, p))))
}

// dur writes seconds for people: "45 s", "3 min 20 s", "2 h 5 min", "3 d 4 h".
func dur(secs float64) string {
	if math.IsNaN(secs) || secs < 0 {
		return "unknown"
	}
	if secs < 1 {
		return "under 1 s"
	}
	if math.IsInf(secs, 1) || secs > 100*365*86400 {
		return "years"
	}
	s := int64(math.Round(secs))
	two := func(a int64, ua string, b int64, ub string) string {
		if b == 0 {
			return fmt.Sprintf("%d %s", a, ua)
		}
		return fmt.Sprintf("%d %s %d %s", a, ua, b, ub)
	}
	switch {
	case s < 60:
		return fmt.Sprintf("%d s", s)
	case s < 600:
		return two(s/60, "min", s%60, "s")
	case s < 3600:
		return fmt.Sprintf("%d min", (s+30)/60)
	case s < 86400:
		return two(s/3600, "h", s%3600/60, "min")
	}
	return two(s/86400, "d", s%86400/3600, "h")
}

// eta writes a time left, "unknown" when there is none.
func eta(secs *float64) string {
	if secs == nil {
		return "unknown"
	}
	return dur(*secs)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return num(n) + " " + many
}
