// Package ratelog bounds the log lines that clients can cause. A Limiter
// logs each kind of line at most burst times per interval (once, by New):
// the lines of that kind held back in between are counted, and the next
// one logged says how many there were (its field "suppressed"), so that
// none goes unaccounted. A flood of calls thus costs at most burst lines
// per kind and interval, whoever sends it and however fast.
//
// A kind is the line's message, or its format: a text of the code, never
// a client's bytes, so that the Limiter's memory is bounded by the kinds
// the code has.
package ratelog

import (
	"sync"
	"time"

	"github.com/sirupsen/logrus"
)

// Interval is the least time between two lines of the same kind that the
// master's limiters let through.
const Interval = 10 * time.Second

// Limiter logs each kind of line at most burst times per interval.
type Limiter struct {
	interval time.Duration
	burst    int
	now      func() time.Time

	mu    sync.Mutex         // guards kinds
	kinds map[string]*window // the current window of each kind logged
}

// window is an interval that began with a line of its kind logged.
type window struct {
	start  time.Time
	logged int // lines logged since start
	held   int // lines held back since the last one logged
}

// New returns a Limiter that lets a kind through at most once per
// interval, reading the time from now (time.Now, or a test's clock).
func New(interval time.Duration, now func() time.Time) *Limiter {
	return NewBurst(interval, 1, now)
}

// NewBurst returns a Limiter that lets a kind through at most burst times
// (at least once) per interval, an interval beginning with the first line
// logged after the last one ended.
func NewBurst(interval time.Duration, burst int, now func() time.Time) *Limiter {
	return &Limiter{interval: interval, burst: max(burst, 1), now: now, kinds: map[string]*window{}}
}

// Log logs msg, which names its kind, at level with fields on log, unless
// a line of that kind was logged less than an interval ago.
func (l *Limiter) Log(log logrus.FieldLogger, level logrus.Level, fields logrus.Fields, msg string) {
	if e, ok := l.entry(log, fields, msg); ok {
		e.Log(level, msg)
	}
}

// Logf is Log of the message format makes with args; format names its
// kind.
func (l *Limiter) Logf(log logrus.FieldLogger, level logrus.Level, fields logrus.Fields, format string, args ...any) {
	if e, ok := l.entry(log, fields, format); ok {
		e.Logf(level, format, args...)
	}
}

// entry is the entry a line of kind is logged with, with its count of the
// lines held back, or false when the line is to be held back.
func (l *Limiter) entry(log logrus.FieldLogger, fields logrus.Fields, kind string) (*logrus.Entry, bool) {
	held, ok := l.take(kind)
	if !ok {
		return nil, false
	}
	e := log.WithFields(fields)
	if held > 0 {
		e = e.WithField("suppressed", held)
	}
	return e, true
}

// take says whether a line of kind may be logged now, and how many lines
// of it were held back since one last was.
func (l *Limiter) take(kind string) (held int, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	w, seen := l.kinds[kind]
	switch {
	case !seen:
		w = &window{start: now}
		l.kinds[kind] = w
	case now.Sub(w.start) >= l.interval:
		w.start, w.logged = now, 0
	case w.logged >= l.burst:
		w.held++
		return 0, false
	}
	held, w.held = w.held, 0
	w.logged++
	return held, true
}
