package master

import (
	"context"
	"time"

	"github.com/pkg/errors"
	"github.com/sirupsen/logrus"

	"github.com/trainmaster/master/go/wire"
)

// Lost trainers. The server tells the service when a connection first
// carries a trainer's name (Connected) and when such a connection ends
// (Disconnected). A named trainer that holds tasks and has no connection
// left for Config.TrainerGrace is lost: its tasks go back to the front of
// Todo at once (taskqueue.Release) instead of waiting for their timeouts,
// and that is not counted against -task-timeout-max. When a term starts,
// every trainer holding tasks in the restored state gets twice that grace
// to call this master: its trainers lost their connection to the old one
// too, and come back with backoff (go/client's waits grow to 5 s).
//
// A trainer that is alive keeps a connection open (go/client and the
// Python client do), so a slow one keeps its tasks until they time out,
// and a network blip shorter than the grace changes nothing. Trainers that
// send no name cannot be told apart and are never taken for lost.

// DefaultTrainerGrace is Config.TrainerGrace's default.
const DefaultTrainerGrace = 5 * time.Second

// presence is what the service knows of its trainers' connections. Its
// maps are bounded by the connections open and the trainers holding tasks.
type presence struct {
	conns map[string]int     // trainer -> open connections that carried its name
	gone  map[string]goneFor // trainer holding tasks -> its grace running
}

// goneFor is a grace running for a trainer without a connection.
type goneFor struct {
	since time.Time
	grace time.Duration
	timer Timer
}

func newPresence() presence {
	return presence{conns: map[string]int{}, gone: map[string]goneFor{}}
}

// Connected tells the service that a connection carries trainer's name.
func (s *datasetService) Connected(trainer string) {
	if !named(trainer) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pres.conns[trainer]++
	if g, ok := s.pres.gone[trainer]; ok {
		g.timer.Stop()
		delete(s.pres.gone, trainer)
		s.cfg.Log.WithFields(logrus.Fields{"trainer": trainer, "away": s.cfg.Clock.Now().Sub(g.since).Round(time.Millisecond)}).
			Debug("trainer back within its grace: it keeps its tasks")
	}
}

// Disconnected tells the service that a connection that carried trainer's
// name ended.
func (s *datasetService) Disconnected(trainer string) {
	if !named(trainer) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pres.conns[trainer]--; s.pres.conns[trainer] > 0 {
		return
	}
	delete(s.pres.conns, trainer)
	if s.q != nil && s.q.Holding(trainer) > 0 {
		s.startGrace(trainer, s.cfg.TrainerGrace)
	}
}

// named reports whether trainer is a name the service follows.
func named(trainer string) bool { return trainer != "" && trainer != wire.Unnamed }

// startGrace starts trainer's grace, unless one runs or the service does
// not follow trainers. Called with s.mu held.
func (s *datasetService) startGrace(trainer string, grace time.Duration) {
	if _, ok := s.pres.gone[trainer]; ok || s.cfg.TrainerGrace < 0 || s.closed {
		return
	}
	s.pres.gone[trainer] = goneFor{since: s.cfg.Clock.Now(), grace: grace, timer: s.cfg.Clock.AfterFunc(grace, func() { s.lose(trainer) })}
}

// restoredGrace multiplies the grace of the trainers holding tasks when a
// term starts.
const restoredGrace = 2

// graceHolders starts the grace of every trainer holding tasks in a state
// just restored that has no connection to this master. Called with s.mu
// held.
func (s *datasetService) graceHolders() {
	if s.q == nil {
		return
	}
	for trainer := range s.q.Holders() {
		if s.pres.conns[trainer] == 0 {
			s.startGrace(trainer, restoredGrace*s.cfg.TrainerGrace)
		}
	}
}

// stopGraces stops every grace running. Called with s.mu held.
func (s *datasetService) stopGraces() {
	for trainer, g := range s.pres.gone {
		g.timer.Stop()
		delete(s.pres.gone, trainer)
	}
}

// lose releases the tasks of trainer, whose grace ran out.
func (s *datasetService) lose(trainer string) {
	_, err := durable(s, func() (struct{}, effect, error) { return s.release(trainer) })
	if err != nil && !errors.Is(err, errUnchanged) {
		s.cfg.Log.WithError(err).WithField("trainer", trainer).Error("cannot commit the release of a lost trainer's tasks; they wait for their timeouts")
	}
}

// release is lose's operation: errUnchanged when the trainer came back,
// the term ended or it holds nothing. Called with s.mu held.
func (s *datasetService) release(trainer string) (struct{}, effect, error) {
	g, ok := s.pres.gone[trainer]
	if !ok {
		return struct{}{}, effect{}, errUnchanged
	}
	delete(s.pres.gone, trainer)
	if err := s.readyWithDataset(context.Background()); err != nil {
		return struct{}{}, effect{}, errUnchanged
	}
	released, ch := s.q.Release(trainer)
	if len(released) == 0 {
		return struct{}{}, effect{}, errUnchanged
	}
	now := s.cfg.Clock.Now()
	fields := logrus.Fields{"trainer": trainer, "tasks": released, "pass": s.q.Pass(),
		"away": now.Sub(g.since).Round(time.Millisecond), "grace": g.grace}
	events := make([]event, 0, len(ch.Records)+1)
	events = append(events, logLine(logrus.WarnLevel, fields, "trainer lost: no connection for its grace (-trainer-grace, twice that after a failover); its tasks are back at the front of todo"))
	for _, r := range ch.Records {
		ev := s.taskEvent(r, now)
		ev.Timeouts, ev.Reason = r.Timeouts, r.Error
		events = append(events, event{tell: notice{kind: tellRetried, trainer: trainer, task: ev, cause: CauseLost}})
	}
	return struct{}{}, effect{change: ch, events: events}, nil
}
