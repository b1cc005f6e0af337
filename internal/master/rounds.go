package master

import (
	"context"

	"github.com/pkg/errors"
	"github.com/sirupsen/logrus"

	"github.com/trainmaster/master/go/wire"
)

// Rounds. A dataset runs its passes, then waits: StartRound runs them again
// (an evaluation dataset after each training pass, say). Round r covers the
// passes r×P to (r+1)×P-1, P being the passes of a round
// (passesPerRound), so that pass numbers keep growing and a report of an
// earlier round is stale, like one of an earlier pass. The round is stored
// with the pass; starting one writes only that key.

// StartRound starts round of the dataset once its current round is over,
// and returns the round now current: asking for a round that already
// started changes nothing, so that every evaluator may ask.
func (s *datasetService) StartRound(ctx context.Context, round int) (int, error) {
	return durable(s, func() (int, effect, error) { return s.startRound(ctx, round) })
}

// startRound is StartRound's operation. Called with s.mu held.
func (s *datasetService) startRound(ctx context.Context, round int) (int, effect, error) {
	if err := s.readyWithDataset(ctx); err != nil {
		return 0, effect{}, err
	}
	switch {
	case round <= s.round:
		return s.round, effect{}, nil
	case round > s.round+1:
		return 0, effect{}, errors.Errorf("master: dataset %q is at round %d: round %d cannot start before round %d", s.name, s.round, round, s.round+1)
	case s.q.Passes() == 0:
		return 0, effect{}, errors.Errorf("master: dataset %q runs passes without end (at pass %d): its round %d never ends, so round %d never starts", s.name, s.q.Pass(), s.round, round)
	case !s.q.AllDone():
		return 0, effect{}, wire.WithKind(errRoundRunning, errors.Errorf("dataset %q is at pass %d of round %d (passes %d to %d); round %d starts once it is over",
			s.name, s.q.Pass(), s.round, s.q.Passes()-s.passesPerRound(s.ds), s.q.Passes()-1, round))
	}
	ch, err := s.q.AddPasses(s.passesPerRound(s.ds))
	if err != nil {
		return 0, effect{}, err
	}
	s.round = round
	fields := logrus.Fields{"round": round, "pass": s.q.Pass(), "passes": s.q.Passes()}
	return round, effect{change: ch, events: []event{logLine(logrus.InfoLevel, fields, "round %d started", round)}}, nil
}

// errRoundRunning carries wire.TextRoundRunning.
var errRoundRunning = errors.New(wire.TextRoundRunning)
