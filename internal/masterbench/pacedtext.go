package masterbench

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"
)

// WriteText prints the paced report as tables for people, one row per
// number of trainers in each: the calls, the master, the requeue.
func (r *PacedReport) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "%d CPUs; each trainer on its own connection (%s) calls GetTask every %v, at a phase of its own", r.CPUs, r.Codec, r.CallEvery)
	if r.Progress {
		fmt.Fprint(w, ", and reports progress once in each task, half a period after its call")
	}
	fmt.Fprintf(w, "; a period and %v of warm-up, then %v measured per row\n", r.Warmup, r.Duration)
	for _, table := range []struct {
		title string
		rows  func(io.Writer)
	}{
		{"calls begun in the window", r.callsTable},
		{"the master at the end of the window; its /metrics read once a second; histograms over the window (bucket bounds)", r.masterTable},
		{fmt.Sprintf("a tenth of the trainers' connections closed at once after the window; the tasks they held dispatched again (waited for at most %v)", r.RequeueWait), r.requeueTable},
	} {
		fmt.Fprintf(w, "\n%s\n", table.title)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		table.rows(tw)
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// callsTable: the calls begun in the window, of each kind.
func (r *PacedReport) callsTable(w io.Writer) {
	fmt.Fprintln(w, "trainers\tconnect\ttarget/s\tGetTask/s\tp50\tp99\tmax\tlate\tno-task\tprogress/s\tp50\tp99\tmax\tlate\terrors\t")
	for _, x := range r.Rows {
		g := x.GetTask
		fmt.Fprintf(w, "%d\t%v\t%.0f\t%.1f\t%v\t%v\t%v\t%d\t%d\t", x.Trainers, x.Connect.Round(time.Millisecond), x.TargetPerSec,
			g.PerSec, round(g.Latency.P50), round(g.Latency.P99), round(g.Latency.Max), g.Late, g.NoTask)
		if p := x.TaskProgress; p != nil {
			fmt.Fprintf(w, "%.1f\t%v\t%v\t%v\t%d\t", p.PerSec, round(p.Latency.P50), round(p.Latency.P99), round(p.Latency.Max), p.Late)
		} else {
			fmt.Fprint(w, "-\t-\t-\t-\t-\t")
		}
		fmt.Fprintf(w, "%d\t\n", x.Errors)
	}
}

// masterTable: the master process at the end of the window, its
// /metrics, and the histograms over the window.
func (r *PacedReport) masterTable(w io.Writer) {
	fmt.Fprintln(w, "trainers\tRSS\tpeak\tthreads\tfds\t/metrics\tread p50\tmax\tfsync p50\tp99\tcommit p50\tp99\tentries p50\tp99\tcommits/s\t")
	for _, x := range r.Rows {
		m := x.Master
		fmt.Fprintf(w, "%d\t%s\t%s\t%d\t%d\t%s\t%v\t%v\t%s\t%s\t%s\t%s\t%s\t%s\t%.0f\t\n", x.Trainers, mib(m.RSS), mib(m.Peak), m.Threads, m.FDs,
			pageText(x.Metrics), round(x.Metrics.Time.P50), round(x.Metrics.Time.Max),
			bound(x.Fsync.P50, true), bound(x.Fsync.P99, true), bound(x.Commit.P50, true), bound(x.Commit.P99, true),
			bound(x.CommitGroup.P50, false), bound(x.CommitGroup.P99, false), x.Commit.Count/r.Duration.Seconds())
	}
}

// requeueTable: a tenth of the connections closed at once.
func (r *PacedReport) requeueTable(w io.Writer) {
	fmt.Fprintln(w, "trainers\tclosed\ttasks held\tdispatched again\tfirst\tall\ttrainer grace\t")
	for _, x := range r.Rows {
		q := x.Requeue
		all := q.All.Round(time.Millisecond).String()
		if q.TimedOut {
			all = "timed out"
		}
		fmt.Fprintf(w, "%d\t%d\t%d\t%d\t%v\t%s\t%s\t\n", x.Trainers, q.Victims, q.Held, q.Again, q.First.Round(time.Millisecond), all, orDash(q.Grace))
	}
}

// pageText is a page's size, and its failed reads if any.
func pageText(p MetricsPage) string {
	s := fmt.Sprintf("%.0f KiB", float64(p.Bytes)/1024)
	if p.Failed > 0 {
		s += fmt.Sprintf(" (%d failed)", p.Failed)
	}
	return s
}

// bound is a bucket's upper bound as people read it: "≤4ms" for a
// histogram of seconds, "≤16" for one of counts; "-" when nothing was
// observed.
func bound(le string, seconds bool) string {
	v, err := strconv.ParseFloat(le, 64)
	switch {
	case le == "":
		return "-"
	case le == "+Inf":
		return le
	case err != nil || !seconds:
		return "≤" + le
	}
	return "≤" + time.Duration(v*float64(time.Second)).String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
