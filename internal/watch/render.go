package watch

import (
	"fmt"
	"math"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/statusapi"
)

// The view. render and summary are pure: the same status, width and time
// give the same text.

const (
	shownTrainers = 5  // the slowest, in the view and the summary
	minWidth      = 20 // narrower terminals are drawn 20 wide, and wrap
	maxBar        = 50 // the progress bar's widest
	nameColumn    = 24 // trainer names longer than this are cut in the view
)

// render returns the lines of the view of st at now (in the master's
// clock), each at most width runes.
func render(st statusapi.Status, width int, now time.Time) []string {
	width = max(width, minWidth)
	var lines []string
	add := func(format string, args ...any) { lines = append(lines, fitWidth(fmt.Sprintf(format, args...), width)) }
	lead := "leader   " + leaderText(st)
	if !st.Leading {
		lead = "this master stands by; leader " + leaderText(st)
	}
	if age := now.Sub(st.Time); age >= 2*time.Second {
		lead += fmt.Sprintf(" (status from %s ago)", formatDuration(age.Seconds()))
	}
	add("%s", lead)
	j := st.Job
	switch {
	case j == nil && st.Leading:
		add("job      none yet: waiting for a trainer to report the dataset")
		return lines
	case j == nil:
		add("job      shown by the leader's page (watch without -addr finds it through etcd)")
		return lines
	}
	if j.RecordsPerTask > 0 {
		add("dataset  index range: %d tasks of %d records, %d records a pass", j.Tasks, j.RecordsPerTask, j.Records)
	} else {
		add("dataset  %s: %d files, %d tasks of %d chunks, %d records a pass", strings.Join(j.Dataset, ","), j.Files, j.Tasks, j.ChunksPerTask, j.Records)
	}
	if j.AllDone {
		add("passes   all %d done", j.Passes)
	} else {
		head := j.PassText() + " "
		tail := fmt.Sprintf(" %3d%%  %d/%d records", j.Percent(), j.RecordsDone, j.Records)
		bar := min(max(width-utf8.RuneCountInString(head+tail)-2, 10), maxBar)
		add("%s[%s]%s", head, progressBar(j, bar), tail)
		add("rate     %s rec/s   eta pass %s, job %s", formatRate(j.RecordsPerSecond), formatETA(j.PassETASeconds), jobETA(j))
		add("queues   todo %d  pending %d  done %d  failed %d  (of %d tasks)", j.Todo, j.Pending, j.Done, j.Failed, j.Tasks)
		if j.Group != nil {
			add("ranks    %s", j.Group.Text())
		}
	}
	for _, d := range st.Datasets { // the others than train, one line each
		if d.AllDone {
			add("%-8s round %d done (%s)", d.Name, d.Round+1, statusapi.PassCount(d.Passes))
		} else {
			add("%-8s round %d, %s %3d%%  %d/%d records, todo %d pending %d done %d failed %d%s", d.Name, d.Round+1,
				d.PassText(), d.Percent(), d.RecordsDone, d.Records, d.Todo, d.Pending, d.Done, d.Failed, groupNote(d.Group))
		}
	}
	for _, line := range checkpointLines(st, now) {
		add("%s", line)
	}
	shown := st.Trainers[:min(len(st.Trainers), shownTrainers)]
	if len(shown) == 0 {
		add("trainers none yet")
		return lines
	}
	head := fmt.Sprintf("trainers the %d slowest of %d", len(shown), st.TrainersTotal)
	if len(shown) == st.TrainersTotal {
		head = fmt.Sprintf("trainers all %d, slowest first", st.TrainersTotal)
	}
	if shown[0].Stalled { // stalled ones come first
		head += " (! stalled)"
	}
	add("%s", head)
	name := 0
	for _, tr := range shown {
		name = max(name, min(utf8.RuneCountInString(tr.Name), nameColumn))
	}
	for _, tr := range shown {
		mark := " "
		if tr.Stalled {
			mark = "!"
		}
		add("  %s %s %7s rec/s%s", mark, padRight(fitWidth(tr.Name, name), name), formatRate(tr.RecordsPerSecond), trainerDetail(tr, now))
	}
	return lines
}

// checkpointLines are the job's last data checkpoint, with the IDs kept,
// and each dataset's last rewind: none when there are none.
func checkpointLines(st statusapi.Status, now time.Time) []string {
	var lines []string
	if c := st.Checkpoints; c != nil {
		l := c.Last
		by := fmt.Sprintf("%d trainers", l.Trainers)
		if l.Trainers == 1 {
			by = "1 trainer"
		}
		if l.Pinned {
			by += ", pinned"
		}
		lines = append(lines, fmt.Sprintf("checkpt  %d %q %s ago by %s; kept %s", l.ID, l.Name,
			formatDuration(max(now.Sub(l.Time).Seconds(), 0)), by, c.KeptText()))
	}
	sets := st.Datasets
	if st.Job != nil {
		sets = append([]statusapi.JobStatus{*st.Job}, sets...)
	}
	for _, d := range sets {
		if d.Rewound != nil {
			lines = append(lines, fmt.Sprintf("%-8s %s", d.Name, d.Rewound.Text()))
		}
	}
	return lines
}

// trainerDetail is what a trainer does, after its rate.
func trainerDetail(tr statusapi.TrainerStatus, now time.Time) string {
	var parts []string
	if tr.Task != nil {
		held := fmt.Sprintf("task %d for %s", tr.Task.Index, formatDuration(tr.Task.HeldSeconds))
		if d := tr.Task.Dataset; d != "" && d != wire.DefaultDataset {
			held = d + " " + held
		}
		if tr.Holding > 1 {
			held += fmt.Sprintf(" (+%d more)", tr.Holding-1)
		}
		parts = append(parts, held)
	}
	if tr.Stalled {
		parts = append(parts, "stalled, silent "+formatDuration(now.Sub(tr.LastSeen).Seconds()))
	}
	if tr.Failures > 0 {
		parts = append(parts, fmt.Sprintf("%d failed", tr.Failures))
	}
	if tr.Timeouts > 0 {
		parts = append(parts, fmt.Sprintf("%d timed out", tr.Timeouts))
	}
	if len(parts) == 0 {
		return ""
	}
	return "  " + strings.Join(parts, ", ")
}

// summary is the plain line of st.
func summary(st statusapi.Status) string {
	var parts []string
	j := st.Job
	switch {
	case !st.Leading:
		parts = append(parts, "this master stands by")
	case j == nil:
		parts = append(parts, "no job yet: waiting for a trainer to report the dataset")
	case j.AllDone:
		parts = append(parts, "all "+statusapi.PassCount(j.Passes)+" done")
	default:
		parts = append(parts,
			fmt.Sprintf("%s %d%%", j.PassText(), j.Percent()),
			formatRate(j.RecordsPerSecond)+" rec/s",
			fmt.Sprintf("eta pass %s job %s", formatETA(j.PassETASeconds), jobETA(j)))
	}
	if j != nil && !j.AllDone {
		parts = append(parts, fmt.Sprintf("todo %d pending %d done %d failed %d%s", j.Todo, j.Pending, j.Done, j.Failed, groupNote(j.Group)))
	}
	if n := min(len(st.Trainers), shownTrainers); n > 0 {
		slow := make([]string, n)
		for i, tr := range st.Trainers[:n] {
			stalled := ""
			if tr.Stalled {
				stalled = "stalled, "
			}
			slow[i] = fmt.Sprintf("%s (%s%s rec/s)", tr.Name, stalled, formatRate(tr.RecordsPerSecond))
		}
		parts = append(parts, "slowest: "+strings.Join(slow, ", "))
	}
	parts = append(parts, "leader "+leaderText(st))
	return strings.Join(parts, " | ")
}

// groupNote is ", group of 3 ranks, batch 32, 105 batches a rank" for a
// pass a group trains, else nothing.
func groupNote(g *statusapi.GroupStatus) string {
	if g == nil {
		return ""
	}
	return ", " + g.Text()
}

// leaderText names the leading master by its page (and host and pid).
func leaderText(st statusapi.Status) string {
	switch {
	case len(st.Masters) > 0 && st.Masters[0].Leading:
		m := st.Masters[0]
		text := statusapi.MasterName(m)
		if m.HTTP != "" {
			text = m.HTTP + " (" + text + ")"
		}
		if n := len(st.Masters) - 1; n > 0 {
			text += fmt.Sprintf(", %d standing by", n)
		}
		return text
	case st.MastersError != "":
		return "unknown: " + st.MastersError
	}
	return "unknown"
}

// jobETA is the time left to the job's end: none without end.
func jobETA(j *statusapi.JobStatus) string {
	if j.Endless {
		return "no end"
	}
	return formatETA(j.JobETASeconds)
}

// progressBar is width cells, as many '#' as the share of the pass done.
func progressBar(j *statusapi.JobStatus, width int) string {
	full := min(max(j.Percent()*width/100, 0), width)
	return strings.Repeat("#", full) + strings.Repeat(".", width-full)
}

// formatETA writes a time left, "unknown" without one.
func formatETA(secs *float64) string {
	if secs == nil {
		return "unknown"
	}
	return formatDuration(*secs)
}

// formatDuration writes seconds compactly: "45s", "1m05s", "2h03m",
// "3d04h".
func formatDuration(secs float64) string {
	if math.IsNaN(secs) || math.IsInf(secs, 0) || secs < 0 || secs > 1e9 {
		return "unknown"
	}
	s := int64(math.Round(secs))
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	case s < 100*3600:
		return fmt.Sprintf("%dh%02dm", s/3600, s%3600/60)
	}
	return fmt.Sprintf("%dd%02dh", s/86400, s%86400/3600)
}

// formatRate writes records per second: whole ones, one decimal under 10.
func formatRate(r float64) string {
	if r > 0 && r < 10 {
		return fmt.Sprintf("%.1f", r)
	}
	return fmt.Sprintf("%.0f", r)
}

// fitWidth cuts s to width runes, the last one an ellipsis when cut, and
// makes it printable.
func fitWidth(s string, width int) string {
	s = printable(s)
	if utf8.RuneCountInString(s) <= width {
		return s
	}
	r := []rune(s)
	return string(r[:max(width-1, 0)]) + "…"
}

// padRight pads s with spaces to width runes.
func padRight(s string, width int) string {
	return s + strings.Repeat(" ", max(width-utf8.RuneCountInString(s), 0))
}

// printable replaces control characters (an escape sequence in a name
// would drive the terminal) and invalid UTF-8.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if r == utf8.RuneError || unicode.IsControl(r) {
			return '?'
		}
		return r
	}, s)
}
