package statusweb

import (
	_ "embed"
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"time"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/monitor"
	"github.com/trainmaster/master/internal/statusapi"
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
	"plur": plural,
	// other says whether a task's dataset is worth naming: one but train.
	"other": func(dataset string) bool { return dataset != "" && dataset != wire.DefaultDataset },
}).Parse(pageHTML))

func (s *Server) page(w http.ResponseWriter, r *http.Request) {
	s.writePage(w, r, s.status(r.Context()))
}

// writePage renders st for the request r: links to the other masters'
// pages take r's scheme, and the master whose address r was sent to is
// marked as this page's.
func (s *Server) writePage(w http.ResponseWriter, r *http.Request, st statusapi.Status) {
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
	statusapi.Status
	Refresh int // seconds
	Title   string
	Masters []masterView // Status.Masters, for the page
	// Leader is the leading master, nil when the lock keys name none.
	Leader    *masterView
	Passes    []passRow
	JobPct    int // the share of the job done (JobStatus.JobPercent)
	Queues    []queueView
	Chart     chartView
	Hidden    int // trainers not shown
	MoreGone  int // discarded tasks not shown
	ShowChart bool
	// ShownStalled and ShownSlowest bound the trainers shown: the stalled,
	// and the slowest of the others.
	ShownStalled, ShownSlowest int
	// Sets are the rows of the datasets table, train first: none when
	// train is the only dataset.
	Sets []setRow
	// Rewinds are the datasets rewound to a data checkpoint, train
	// first, each with its last rewind.
	Rewinds []rewindRow
}

// rewindRow is a dataset's last rewind, a line of the checkpoints.
type rewindRow struct {
	Dataset string
	*statusapi.RewindStatus
}

// setRow is a dataset of the job, a row of the datasets table.
type setRow struct {
	*statusapi.JobStatus
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

func newPageView(st statusapi.Status, refresh time.Duration, scheme, host string) *pageView {
	v := &pageView{Status: st, Refresh: max(1, int(refresh.Round(time.Second)/time.Second)),
		ShownStalled: monitor.MaxShownStalled, ShownSlowest: monitor.MaxShownTrainers}
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
		v.Passes, v.JobPct = passRows(j), j.JobPercent()
		v.Queues = queues(j)
		v.MoreGone = max(0, j.Failed-len(j.Discarded))
		if j.AllDone {
			v.Title = "all " + plural(j.Passes, "pass", "passes") + " done"
		} else {
			v.Title = fmt.Sprintf("%s, %d%%", j.PassText(), j.Percent())
		}
	}
	if j := st.Job; j != nil && j.Rewound != nil {
		v.Rewinds = append(v.Rewinds, rewindRow{Dataset: j.Name, RewindStatus: j.Rewound})
	}
	for _, d := range st.Datasets {
		if d.Rewound != nil {
			v.Rewinds = append(v.Rewinds, rewindRow{Dataset: d.Name, RewindStatus: d.Rewound})
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

func newSetRow(j *statusapi.JobStatus) setRow {
	r := setRow{JobStatus: j, Records: fmt.Sprintf("%s of %s · %d%%", num(j.RecordsDone), num(j.Records), j.Percent())}
	if j.RecordsPerTask > 0 {
		r.Kind = fmt.Sprintf("index range of %s records in tasks of %s", num(j.Records), num(j.RecordsPerTask))
	} else {
		r.Kind = fmt.Sprintf("%s in tasks of %s", plural(j.Files, "file", "files"), plural(j.ChunksPerTask, "chunk", "chunks"))
	}
	return r
}

// passRows returns the bars of the passes: without end, the passes done
// and the current one.
func passRows(j *statusapi.JobStatus) []passRow {
	done := func(first, last int) passRow {
		return passRow{Label: passRange(first, last), State: "done", First: first, Percent: "100.00", Detail: "done"}
	}
	todo := func(first, last int) passRow {
		return passRow{Label: passRange(first, last), State: "todo", First: first, Percent: "0.00", Detail: "to come"}
	}
	var rows []passRow
	if j.Endless {
		if j.Pass > 0 {
			rows = append(rows, done(1, j.Pass))
		}
		return append(rows, currentRow(j))
	}
	if j.Passes <= maxPassBars {
		for p := 1; p <= j.Passes; p++ {
			switch {
			case p <= j.Pass:
				rows = append(rows, done(p, p))
			case p == j.Pass+1:
				rows = append(rows, currentRow(j))
			default:
				rows = append(rows, todo(p, p))
			}
		}
		return rows
	}
	if j.Pass > 0 {
		rows = append(rows, done(1, min(j.Pass, j.Passes)))
	}
	if !j.AllDone && j.Pass < j.Passes {
		rows = append(rows, currentRow(j))
		if j.Pass+2 <= j.Passes {
			rows = append(rows, todo(j.Pass+2, j.Passes))
		}
	}
	return rows
}

func currentRow(j *statusapi.JobStatus) passRow {
	return passRow{Label: passRange(j.Pass+1, j.Pass+1), State: "current", First: j.Pass + 1,
		Percent: strconv.FormatFloat(100*j.Share(), 'f', 2, 64),
		Detail:  fmt.Sprintf("%s of %s records, %d%%", num(j.RecordsDone), num(j.Records), j.Percent())}
}

func passRange(first, last int) string {
	if first == last {
		return "Pass " + strconv.Itoa(first)
	}
	return fmt.Sprintf("Passes %d–%d", first, last)
}

func queues(j *statusapi.JobStatus) []queueView {
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
func (v *pageView) OtherPass(t *statusapi.HeldTask) bool {
	if t.Dataset == "" || t.Dataset == wire.DefaultDataset {
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
