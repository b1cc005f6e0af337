package master

import (
	"time"

	"github.com/sirupsen/logrus"

	"github.com/trainmaster/master/internal/ratelog"
	"github.com/trainmaster/master/internal/taskqueue"
)

// An event is what an operation tells once its change is durable: a log
// line (none when format is empty), then an Observer call (none when tell
// is zero). Events are built under the dataset's lock, from the state the
// change left, and emitted outside it (durable).
//
// What a client's calls can log is bounded: a line a client can repeat at
// will (a report ignored, a finish repeated, progress past a cut, a
// failure report) is at debug level or limited (limitedLine); every other
// line at info or above tells a change committed to the store that no
// call repeats at will: a timeout, a pass ended, a dataset accepted, a
// straggler relieved, a trainer lost (doc/reliability.md, "The log's
// growth per client").
type event struct {
	level  logrus.Level
	fields logrus.Fields
	format string
	args   []any
	limit  lineLimit
	tell   notice
}

// logLine is an event that only logs.
func logLine(level logrus.Level, fields logrus.Fields, format string, args ...any) event {
	return event{level: level, fields: fields, format: format, args: args}
}

// limitedLine is a logLine a client can repeat at will: the job logs at
// most one line of its format per ratelog.Interval, whatever the dataset
// and the client, the next one counting those held back.
func limitedLine(level logrus.Level, fields logrus.Fields, format string, args ...any) event {
	ev := logLine(level, fields, format, args...)
	ev.limit = limitRepeats
	return ev
}

// lineLimit says which of the job's limiters a line goes through.
type lineLimit uint8

const (
	unlimited     lineLimit = iota // a change no call repeats at will
	limitRepeats                   // limitedLine
	limitFailures                  // a failure report that sent a task back
)

// FailureLinesBurst is how many lines of failure reports that sent a task
// back (or discarded it) the job logs per ratelog.Interval, per kind: a
// client can fail every task it is handed as fast as the master commits,
// while the status page and the metrics count every failure.
const FailureLinesBurst = 100

// lineLimits are the job's limiters of the lines clients cause, shared by
// every dataset.
type lineLimits struct {
	repeats  *ratelog.Limiter // limitRepeats: once per interval
	failures *ratelog.Limiter // limitFailures: FailureLinesBurst per interval
}

func newLineLimits(now func() time.Time) lineLimits {
	return lineLimits{repeats: ratelog.New(ratelog.Interval, now), failures: ratelog.NewBurst(ratelog.Interval, FailureLinesBurst, now)}
}

// A notice is an Observer call.
type notice struct {
	kind    noticeKind
	trainer string
	task    TaskEvent
	cause   RetryCause           // tellRetried
	relief  taskqueue.Stragglers // tellRelieved
}

type noticeKind int

// The Observer calls of a notice; the zero notice calls nothing.
const (
	tellDispatched noticeKind = iota + 1
	tellFinished
	tellRetried
	tellRelieved
)

// emit logs events and tells them to the Observer, in order.
func (s *datasetService) emit(events []event) {
	for _, ev := range events {
		switch {
		case ev.format == "":
		case ev.limit == limitRepeats:
			s.limits.repeats.Logf(s.cfg.Log, ev.level, ev.fields, ev.format, ev.args...)
		case ev.limit == limitFailures:
			s.limits.failures.Logf(s.cfg.Log, ev.level, ev.fields, ev.format, ev.args...)
		default:
			s.cfg.Log.WithFields(ev.fields).Logf(ev.level, ev.format, ev.args...)
		}
		ev.tell.to(s.cfg.Observer)
	}
}

func (n notice) to(o Observer) {
	switch n.kind {
	case tellDispatched:
		o.Dispatched(n.trainer, n.task)
	case tellFinished:
		o.Finished(n.trainer, n.task)
	case tellRetried:
		o.Retried(n.trainer, n.task, n.cause)
	case tellRelieved:
		o.Relieved(n.trainer, n.relief)
	}
}

// taskEvent describes the task of r for the Observer. Called with s.mu
// held.
func (s *datasetService) taskEvent(r taskqueue.Record, at time.Time) TaskEvent {
	return TaskEvent{Dataset: s.name, Index: r.Index, Pass: r.Pass, Epoch: r.Epoch, Records: s.q.Length(r.Entry), At: at}
}

// retryEvents are the events of a change that sent tasks back to Todo or
// discarded them, after a failure reported by trainer or a timeout; they
// read the state now. Called with s.mu held.
func (s *datasetService) retryEvents(ch taskqueue.Change, trainer string, cause RetryCause) []event {
	events := make([]event, 0, len(ch.Records)+1)
	now := s.cfg.Clock.Now()
	for _, r := range ch.Records {
		fields := logrus.Fields{"task": r.Index, "pass": r.Pass, "timeouts": r.Timeouts, "reason": r.Error}
		if trainer != "" {
			fields["trainer"] = trainer
		}
		ev := s.taskEvent(r, now)
		ev.Timeouts, ev.Reason, ev.Discarded = r.Timeouts, r.Error, r.Queue == taskqueue.Failed
		level, format := logrus.InfoLevel, "task %s; back in todo"
		if ev.Discarded {
			fields["blocks"] = s.ds.Blocks(r.Of)
			level, format = logrus.WarnLevel, "task %s too often; discarded for this pass"
		}
		line := logLine(level, fields, format, cause)
		if cause == CauseFailed {
			line.limit = limitFailures
		}
		line.tell = notice{kind: tellRetried, trainer: trainer, task: ev, cause: cause}
		events = append(events, line)
	}
	return append(events, s.passEvents(ch)...)
}

// passEvents are the events of a change that may have ended a pass; they
// read the state now. Called with s.mu held.
func (s *datasetService) passEvents(ch taskqueue.Change) []event {
	switch {
	case !ch.PassChanged:
		return nil
	case s.q.AllDone():
		return []event{logLine(logrus.InfoLevel, logrus.Fields{"passes": s.q.Passes()}, "pass finished; all passes done")}
	}
	return []event{logLine(logrus.InfoLevel, logrus.Fields{"pass": ch.Pass}, "pass %d finished; pass %d started", ch.Pass-1, ch.Pass)}
}
