package trainerport

import (
	"sync"
	"time"

	"github.com/sirupsen/logrus"
)

// rateLog logs a warning at most once per interval for each message: the
// lines held back in between are counted, and the next line of that message
// says how many there were ("suppressed"). A flood of bad connections thus
// costs one line per message and interval, and none is lost unaccounted.
type rateLog struct {
	log      logrus.FieldLogger
	interval time.Duration

	mu   sync.Mutex
	last map[string]time.Time // when each message was last logged
	held map[string]int       // lines of each message held back since
}

func newRateLog(log logrus.FieldLogger, interval time.Duration) *rateLog {
	return &rateLog{log: log, interval: interval, last: map[string]time.Time{}, held: map[string]int{}}
}

// Warn logs msg with fields unless msg was logged less than an interval ago.
func (r *rateLog) Warn(msg string, fields logrus.Fields) {
	held, ok := r.take(msg)
	if !ok {
		return
	}
	if held > 0 {
		fields["suppressed"] = held
	}
	r.log.WithFields(fields).Warn(msg)
}

// take says whether msg may be logged now, and how many lines of it were
// held back since it last was.
func (r *rateLog) take(msg string) (held int, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	if last, seen := r.last[msg]; seen && now.Sub(last) < r.interval {
		r.held[msg]++
		return 0, false
	}
	held = r.held[msg]
	r.last[msg], r.held[msg] = now, 0
	return held, true
}
