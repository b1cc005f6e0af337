package watch

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/trainmaster/master/internal/statusapi"
)

// screen shows statuses: redrawn in place on a terminal, as lines
// elsewhere. It is used by one goroutine.
type screen struct {
	out      io.Writer
	terminal func() (cols, rows int) // nil: plain lines
	interval time.Duration
	drawn    int    // lines of the view on the terminal now
	last     string // plain: the last line printed
	// What the terminal shows: the last status, from where, when it came,
	// and the latest notice ("" once a status came after it).
	st       *statusapi.Status
	addr     string
	received time.Time
	note     string
}

func newScreen(out io.Writer, terminal func() (cols, rows int), interval time.Duration, addr string) *screen {
	return &screen{out: out, terminal: terminal, interval: interval, addr: addr}
}

func (s *screen) show(st statusapi.Status, addr string, now time.Time) {
	s.st, s.addr, s.received, s.note = &st, addr, now, ""
	if s.terminal == nil {
		if st.Job == nil || !st.Job.AllDone { // done says it
			s.line(summary(st))
		}
		return
	}
	s.redraw()
}

func (s *screen) notice(msg string) {
	if msg == "" {
		return
	}
	s.note = msg
	if s.terminal == nil {
		s.line(msg)
		return
	}
	s.redraw()
}

// done ends the view with the final line.
func (s *screen) done(st statusapi.Status) {
	j := st.Job
	msg := fmt.Sprintf("all %s done: %d tasks, %d records a pass", statusapi.PassCount(j.Passes), j.Tasks, j.Records)
	if j.Failed > 0 {
		msg += fmt.Sprintf("; %d tasks discarded in the last pass", j.Failed)
	}
	s.drawn = 0 // the view stays above the line
	fmt.Fprintln(s.out, msg)
}

// line prints a plain line unless it is the last one printed again.
func (s *screen) line(l string) {
	if l = printable(l); l != s.last {
		s.last = l
		fmt.Fprintln(s.out, l)
	}
}

// redraw draws the view over the last one: the cursor goes up the lines
// drawn, and the screen below it is cleared (ANSI).
func (s *screen) redraw() {
	cols, rows := s.terminal()
	if cols <= 0 {
		cols = 80
	}
	// A line as wide as the terminal may wrap, and the cursor would not
	// come back up far enough: keep one column free.
	width := max(cols-1, minWidth)
	lines := []string{fitWidth(fmt.Sprintf("master watch: %s every %v; Ctrl-C to stop", s.where(), s.interval), width)}
	if s.st != nil {
		// now in the master's clock: its time, plus what has passed here.
		lines = append(lines, render(*s.st, width, s.st.Time.Add(time.Since(s.received)))...)
	}
	if s.note != "" {
		lines = append(lines, fitWidth("! "+s.note, width))
	}
	if rows > 1 && len(lines) > rows-1 {
		lines = lines[:rows-1]
	}
	var b strings.Builder
	if s.drawn > 0 {
		fmt.Fprintf(&b, "\r\x1b[%dA", s.drawn)
	}
	b.WriteString("\x1b[J")
	for _, l := range lines {
		b.WriteString(l)
		b.WriteString("\n")
	}
	_, _ = io.WriteString(s.out, b.String())
	s.drawn = len(lines)
}

func (s *screen) where() string {
	if s.addr == "" {
		return "the leading master's page, from etcd,"
	}
	return s.addr
}
