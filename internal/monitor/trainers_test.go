package monitor

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pkg/errors"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/trainmaster/master/internal/master"
)

// TestTrainersRoom: with the table full, the least recently seen trainer
// holding nothing is dropped for a newcomer; a trainer holding a task is
// never dropped, and a newcomer that holds nothing is left out when every
// trainer holds one; Status counts the trainers left out until they are
// tracked again or silent for ForgetAfter.
func TestTrainersRoom(t *testing.T) {
	flood := func(m *Monitor, c *clock, prefix string, n int) {
		for i := range n {
			m.Called(fmt.Sprintf("%s-%d", prefix, i), c.advance(time.Millisecond))
		}
	}
	cases := []struct {
		name      string
		max       int
		steps     func(m *Monitor, c *clock)
		want      []string // the trainers tracked, sorted
		untracked int
	}{
		{"holders survive a flood", 3, func(m *Monitor, c *clock) {
			m.Dispatched("holder-1", ev(0, 0, 1, c.Now()))
			m.Dispatched("holder-2", ev(1, 0, 1, c.Now()))
			flood(m, c, "x", 10_000)
		}, []string{"holder-1", "holder-2", "x-9999"}, 9_999},
		{"every trainer holds: a newcomer holding nothing is left out", 2, func(m *Monitor, c *clock) {
			m.Dispatched("a", ev(0, 0, 1, c.Now()))
			m.Dispatched("b", ev(1, 0, 1, c.Now()))
			m.Called("c", c.advance(time.Second))
			m.Finished("d", ev(2, 0, 1, c.Now())) // a finish of a task nobody known held
		}, []string{"a", "b"}, 2},
		{"a newcomer given a task is tracked beyond the limit", 2, func(m *Monitor, c *clock) {
			m.Dispatched("a", ev(0, 0, 1, c.Now()))
			m.Dispatched("b", ev(1, 0, 1, c.Now()))
			m.Called("c", c.advance(time.Second))
			m.Dispatched("c", ev(2, 0, 1, c.Now()))
		}, []string{"a", "b", "c"}, 0},
		{"least recently seen first", 3, func(m *Monitor, c *clock) {
			for _, name := range []string{"a", "b", "c", "a", "d"} { // b goes
				m.Called(name, c.advance(time.Second))
			}
			m.Called("b", c.advance(time.Second)) // back, c goes: b is no longer counted
		}, []string{"a", "b", "d"}, 1},
		{"a holder that finished may go", 2, func(m *Monitor, c *clock) {
			m.Dispatched("h", ev(0, 0, 1, c.Now()))
			m.Called("x", c.advance(time.Second))
			m.Finished("h", ev(0, 0, 1, c.advance(time.Second))) // h holds nothing, seen after x
			m.Called("y", c.advance(time.Second))                // x goes
			m.Called("z", c.advance(time.Second))                // h goes
		}, []string{"y", "z"}, 2},
		{"a holder whose task went back stays as if seen then", 2, func(m *Monitor, c *clock) {
			m.Dispatched("h", ev(0, 0, 1, c.Now()))
			m.Called("x", c.advance(time.Second))
			m.Retried("", ev(0, 0, 1, c.advance(time.Minute)), master.CauseTimedOut) // h, silent since the start, holds nothing
			m.Called("y", c.advance(time.Second))                                    // x goes
		}, []string{"h", "y"}, 1},
		{"a new term: the former holders may go", 2, func(m *Monitor, c *clock) {
			m.Dispatched("h1", ev(0, 0, 1, c.Now()))
			m.Dispatched("h2", ev(1, 0, 1, c.advance(time.Second)))
			m.Dispatched("h3", ev(2, 0, 1, c.advance(time.Second)))
			m.Lead(nil)
			m.Called("x", c.advance(time.Second)) // h1 and h2 go
		}, []string{"h3", "x"}, 2},
		{"the left out are forgotten after ForgetAfter", 2, func(m *Monitor, c *clock) {
			m.Dispatched("h", ev(0, 0, 1, c.Now()))
			flood(m, c, "x", 100)
			c.advance(DefaultForgetAfter + time.Millisecond) // the last of them called longer than ForgetAfter ago
			m.Called("y", c.Now())
		}, []string{"h", "y"}, 0},
		{"left out beyond the names remembered", 2, func(m *Monitor, c *clock) {
			flood(m, c, "x", 10)
			m.Called("x-0", c.advance(time.Second)) // no longer remembered: counted twice
		}, []string{"x-0", "x-9"}, 9},
		{"a trainer left out is counted until ForgetAfter after its last call", 3, func(m *Monitor, c *clock) {
			flood(m, c, "x", 5)                                // x-0 and x-1 go
			c.advance(DefaultForgetAfter - 3*time.Millisecond) // x-0 called ForgetAfter ago and more, x-1 just ForgetAfter ago
		}, []string{"x-2", "x-3", "x-4"}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, c := newMonitor(Config{MaxTrainers: tc.max})
			m.Lead(jobService(t))
			tc.steps(m, c)
			st := m.Status()
			var got []string
			for _, tr := range st.Trainers {
				got = append(got, tr.Name)
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) || st.TrainersTotal != len(tc.want) || st.TrainersUntracked != tc.untracked {
				t.Errorf("tracked %q (total %d), %d untracked; want %q, %d untracked", got, st.TrainersTotal, st.TrainersUntracked, tc.want, tc.untracked)
			}
		})
	}
}

// TestHoldersInMetrics: every trainer holding a task has its series in the
// metrics, even beyond MaxTrainers, and is shown stalled once silent; the
// series of a trainer dropped vanish.
func TestHoldersInMetrics(t *testing.T) {
	m, c := newMonitor(Config{MaxTrainers: 2, StallAfter: time.Second})
	svc := jobService(t)
	m.Lead(svc)
	for i := range 3 { // their connections open, told by the port
		svc.Connected(fmt.Sprintf("h%d", i))
	}
	m.Called("gone", c.Now())
	for i := range 3 {
		m.Dispatched(fmt.Sprintf("h%d", i), ev(i, 0, 3, c.Now()))
	}
	for i := range 1000 {
		m.Called(fmt.Sprintf("x-%d", i), c.advance(time.Millisecond))
	}
	c.advance(2 * time.Second)
	want := `
# HELP trainmaster_trainer_holding_tasks Tasks the trainer holds now.
# TYPE trainmaster_trainer_holding_tasks gauge
trainmaster_trainer_holding_tasks{trainer="h0"} 1
trainmaster_trainer_holding_tasks{trainer="h1"} 1
trainmaster_trainer_holding_tasks{trainer="h2"} 1
# HELP trainmaster_trainer_stalled 1 while the job runs and the trainer is silent for longer than a task takes, or a task it held timed out or was taken back as lost since.
# TYPE trainmaster_trainer_stalled gauge
trainmaster_trainer_stalled{trainer="h0"} 1
trainmaster_trainer_stalled{trainer="h1"} 1
trainmaster_trainer_stalled{trainer="h2"} 1
# HELP trainmaster_trainers Named trainers with a connection open to this master, tracked or not.
# TYPE trainmaster_trainers gauge
trainmaster_trainers 3
`
	if err := testutil.CollectAndCompare(m.Collector(), strings.NewReader(want),
		"trainmaster_trainer_holding_tasks", "trainmaster_trainer_stalled", "trainmaster_trainers"); err != nil {
		t.Error(err)
	}
	if st := m.Status(); st.TrainersUntracked != 1001 {
		t.Errorf("%d trainers untracked, want 1001", st.TrainersUntracked)
	}
}

// TestTrainerTableInvariants: whatever the monitor is told, in any order,
// over a few names and tasks in a small table with terms and forgetting,
// its trainers stay consistent (trainers.check).
func TestTrainerTableInvariants(t *testing.T) {
	for seed := range 20 {
		rng := rand.New(rand.NewPCG(uint64(seed), 27))
		m, c := newMonitor(Config{MaxTrainers: 4})
		m.Lead(running)
		for step := range 2000 {
			name := fmt.Sprintf("t%d", rng.IntN(8))
			task := ev(rng.IntN(6), 0, 1, c.advance(time.Duration(rng.IntN(3000))*time.Millisecond))
			switch rng.IntN(8) {
			case 0:
				m.Called(name, task.At)
			case 1, 2:
				m.Dispatched(name, task)
			case 3:
				m.Finished(name, task)
			case 4:
				m.Retried(name, task, master.CauseFailed)
			case 5:
				m.Retried("", task, master.CauseTimedOut)
			case 6:
				m.Retried(name, task, master.CauseLost)
			case 7:
				if rng.IntN(20) == 0 {
					m.Lead(running) // a new term
				}
				m.Status() // forgets the trainers silent for ForgetAfter
			}
			if err := m.trainers.check(); err != nil {
				t.Fatalf("seed %d, step %d: %v", seed, step, err)
			}
		}
	}
}

// check returns what is wrong with ts, if anything: the idle list must
// link, both ways, exactly the trainers tracked that hold nothing, most
// recently touched first; every task held must be its holder's, once.
func (ts *trainers) check() error {
	idle, holding := 0, 0
	var prev *trainer
	for t := ts.idle.front; t != nil; prev, t = t, t.next {
		switch {
		case idle == len(ts.byName):
			return errors.New("the idle list is longer than the table")
		case ts.byName[t.name] != t:
			return errors.Errorf("%s is idle but not tracked", t.name)
		case len(t.held) > 0:
			return errors.Errorf("%s is idle but holds %d tasks", t.name, len(t.held))
		case t.prev != prev:
			return errors.Errorf("%s is not linked back to the trainer before it", t.name)
		case prev != nil && prev.touched.Before(t.touched):
			return errors.Errorf("%s, touched at %v, is after %s, touched before it", t.name, t.touched, prev.name)
		}
		idle++
	}
	if ts.idle.back != prev {
		return errors.New("the idle list's back is not its last trainer")
	}
	for _, t := range ts.byName {
		holding += len(t.held)
		if len(t.held) == 0 {
			idle--
		}
		for _, h := range t.held {
			if ts.holders[h.task] != t {
				return errors.Errorf("%s holds task %v, whose holder is another", t.name, h.task)
			}
		}
	}
	if idle != 0 || holding != len(ts.holders) {
		return errors.Errorf("%d idle trainers not listed, %d tasks held of %d holders", idle, holding, len(ts.holders))
	}
	return nil
}
