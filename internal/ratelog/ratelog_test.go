package ratelog

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
)

// TestLimiter: each kind is logged at most once per interval, the next
// line saying how many were held back meanwhile; kinds do not hold each
// other back.
func TestLimiter(t *testing.T) {
	steps := []struct {
		after time.Duration // since the previous step
		kind  string
		want  string // the line logged; empty: held back
	}{
		{0, "a", `msg=a`},
		{0, "a", ``},
		{0, "b", `msg=b`},
		{Interval - time.Nanosecond, "a", ``},
		{0, "a", ``},
		{time.Nanosecond, "a", `msg=a suppressed=3`},
		{Interval, "a", `msg=a`},
		{0, "b", `msg=b`},
	}
	log, out := textLog()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := New(Interval, func() time.Time { return now })
	for i, s := range steps {
		now = now.Add(s.after)
		out.Reset()
		l.Log(log, logrus.WarnLevel, nil, s.kind)
		got := strings.TrimSpace(strings.TrimPrefix(out.String(), "level=warning "))
		if got != s.want {
			t.Errorf("step %d (%s): logged %q, want %q", i, s.kind, got, s.want)
		}
	}
}

// TestLimiterKindIsTheFormat: lines of one format are one kind whatever
// their arguments, and keep their fields.
func TestLimiterKindIsTheFormat(t *testing.T) {
	log, out := textLog()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := New(Interval, func() time.Time { return now })
	for i := range 5 {
		l.Logf(log, logrus.InfoLevel, logrus.Fields{"task": i}, "report ignored: %d", i)
	}
	now = now.Add(Interval)
	l.Logf(log, logrus.InfoLevel, logrus.Fields{"task": 9}, "report ignored: %d", 9)
	want := "level=info msg=\"report ignored: 0\" task=0\nlevel=info msg=\"report ignored: 9\" suppressed=4 task=9\n"
	if out.String() != want {
		t.Fatalf("logged\n%s\nwant\n%s", out.String(), want)
	}
}

// TestLimiterBurst: with a burst, the first lines of a kind in an interval
// pass, the rest are held back and counted on the first line of the next.
func TestLimiterBurst(t *testing.T) {
	log, out := textLog()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := NewBurst(Interval, 3, func() time.Time { return now })
	for i := range 10 {
		l.Logf(log, logrus.InfoLevel, logrus.Fields{"task": i}, "task %d failed", i)
		now = now.Add(Interval / 20)
	}
	now = now.Add(Interval / 2) // the window that began with task 0 is over
	l.Logf(log, logrus.InfoLevel, logrus.Fields{"task": 10}, "task %d failed", 10)
	want := "level=info msg=\"task 0 failed\" task=0\nlevel=info msg=\"task 1 failed\" task=1\nlevel=info msg=\"task 2 failed\" task=2\n" +
		"level=info msg=\"task 10 failed\" suppressed=7 task=10\n"
	if out.String() != want {
		t.Fatalf("logged\n%s\nwant\n%s", out.String(), want)
	}
}

// textLog is a logger writing plain lines without timestamps to out.
func textLog() (*logrus.Logger, *bytes.Buffer) {
	out := &bytes.Buffer{}
	log := logrus.New()
	log.SetOutput(out)
	log.SetFormatter(&logrus.TextFormatter{DisableTimestamp: true})
	return log, out
}
