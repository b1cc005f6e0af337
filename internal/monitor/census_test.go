package monitor

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/master"
)

// running is a leading service whose train is in its first pass.
var running = jobSource{{Name: wire.DefaultDataset, Tasks: 100_000, Records: 1_000_000, Passes: 2, Todo: 50_000, Pending: 50_000}}

// Kinds of trainers in a crowd, one each of every crowdKinds trainers:
// working hold a task and call, idle wait for one, stalled hold a task
// and stopped calling, lost were killed and their task went back.
const (
	crowdKinds = 20
	crowdIdle  = 16 // and 17
	crowdLost  = 18
	crowdStall = 19 // below crowdIdle: working
)

// crowd fills m, led by src, with n trainers as a job at scale, over a
// minute of c's time: every trainer connects and is handed a task; 5 s
// later those working finish it (held 5 s: a trainer is then stalled
// after 15 s of silence) and take the next, the idle ones finish theirs
// and find none, the lost ones' connections are closed and their tasks go
// back; at 60 s the working and idle call again, the stalled ones stay
// silent. Of every 20: 16 working, 2 idle, 1 stalled, 1 lost.
func crowd(m *Monitor, src *connected, c *clock, n int) {
	name := func(i int) string { return fmt.Sprintf("trainer-%05d", i) }
	t0 := c.Now()
	for i := range n {
		src.conns[name(i)]++
		m.Called(name(i), t0)
		m.Dispatched(name(i), ev(i, 0, 100, t0))
	}
	at := c.advance(5 * time.Second)
	for i := range n {
		switch kind := i % crowdKinds; {
		case kind == crowdLost:
			delete(src.conns, name(i))
			m.Retried(name(i), ev(i, 0, 100, at), master.CauseLost)
		case kind < crowdIdle:
			m.Called(name(i), at)
			m.Finished(name(i), ev(i, 0, int64(10*(1+i%7)), at))
			m.Dispatched(name(i), ev(n+i, 0, 100, at))
		case kind < crowdLost:
			m.Called(name(i), at)
			m.Finished(name(i), ev(i, 0, 100, at))
		}
	}
	at = c.advance(55 * time.Second)
	for i := range n {
		if i%crowdKinds < crowdLost {
			m.Called(name(i), at)
		}
	}
	c.advance(time.Second)
}

// scrapeText returns the monitor's metrics as /metrics serves them.
func scrapeText(t testing.TB, m *Monitor) string {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(m.Collector())
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", rec.Code, rec.Body)
	}
	return rec.Body.String()
}

// TestTrainersCountedExactly: every trainer is counted, in the status and
// the metrics alike, however many there are: connected (every named
// trainer with a connection open to the master, tracked or not), stalled
// (silent, or lost), tracked, and not tracked past MaxTrainers; the
// distributions count one observation per trainer tracked and connected
// (rated) and per holder; the table shows every stalled trainer, then the
// slowest.
func TestTrainersCountedExactly(t *testing.T) {
	cases := []struct {
		name                                             string
		cfg                                              Config
		fill                                             func(m *Monitor, src *connected, c *clock)
		tracked, connected, rated, stalled, held, tabled int
		untracked                                        int
	}{
		{"a crowd of 20", Config{}, func(m *Monitor, src *connected, c *clock) { crowd(m, src, c, 20) }, 20, 19, 19, 2, 17, 2 + 18, 0},
		{"a crowd of 10,000", Config{}, func(m *Monitor, src *connected, c *clock) { crowd(m, src, c, 10_000) },
			10_000, 9_500, 9_500, 1_000, 8_500, MaxShownStalled + MaxShownTrainers, 0},
		{"a crowd of 10,000 in a table of 1,000, and a flood", Config{MaxTrainers: 1000}, func(m *Monitor, src *connected, c *clock) {
			crowd(m, src, c, 10_000)
			for i := range 5_000 { // each on a connection that closed after its call
				m.Called(fmt.Sprintf("ghost-%d", i), c.Now())
			}
		}, // the 8,500 holders are kept beyond the bound, the others go, but are counted connected
			8_500, 9_500, 8_500, 500, 8_500, 500 + MaxShownTrainers, 1_500 + 5_000},
		{"a flood of names past the bound", Config{MaxTrainers: 1000}, func(m *Monitor, src *connected, c *clock) {
			for i := range 100 {
				src.conns[fmt.Sprintf("holder-%d", i)] = 1
				m.Dispatched(fmt.Sprintf("holder-%d", i), ev(i, 0, 10, c.Now()))
			}
			for i := range 5_000 {
				m.Called(fmt.Sprintf("ghost-%d", i), c.advance(time.Microsecond))
			}
		}, 1000, 100, 100, 0, 100, MaxShownTrainers, 4_100},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, c := newMonitor(tc.cfg)
			src := newConnected(running)
			m.Lead(src)
			tc.fill(m, src, c)
			st := m.Status()
			if st.TrainersTotal != tc.tracked || st.TrainersConnected != tc.connected || st.TrainersStalled != tc.stalled ||
				st.TrainersUntracked != tc.untracked || len(st.Trainers) != tc.tabled {
				t.Errorf("status: %d tracked, %d connected, %d stalled, %d untracked, %d in the table; want %d, %d, %d, %d, %d",
					st.TrainersTotal, st.TrainersConnected, st.TrainersStalled, st.TrainersUntracked, len(st.Trainers),
					tc.tracked, tc.connected, tc.stalled, tc.untracked, tc.tabled)
			}
			text := scrapeText(t, m)
			for _, line := range []string{
				fmt.Sprintf("trainmaster_trainers %d", tc.connected),
				fmt.Sprintf("trainmaster_trainers_stalled %d", tc.stalled),
				fmt.Sprintf("trainmaster_trainers_tracked %d", tc.tracked),
				fmt.Sprintf("trainmaster_trainers_untracked %d", tc.untracked),
				fmt.Sprintf("trainmaster_trainers_records_per_second_count %d", tc.rated),
				fmt.Sprintf("trainmaster_trainers_task_held_seconds_count %d", tc.held),
			} {
				if !strings.Contains(text, "\n"+line+"\n") {
					t.Errorf("/metrics holds no line %q", line)
				}
			}
		})
	}
}

// TestTrainersTable: the status's table lists the stalled trainers first,
// those holding a task before the others, then the slowest of the rest,
// each group slowest first; its rows say which are connected and lost.
func TestTrainersTable(t *testing.T) {
	m, c := newMonitor(Config{})
	src := newConnected(running)
	m.Lead(src)
	crowd(m, src, c, 10_000)
	st := m.Status()
	stalled := st.Trainers[:MaxShownStalled]
	for i, tr := range stalled {
		if !tr.Stalled {
			t.Fatalf("row %d is not stalled: %+v", i, tr)
		}
		if holds := i < 500; (tr.Holding > 0) != holds || tr.Lost == holds || tr.Connected != holds {
			t.Fatalf("row %d: %+v; want the 500 stalled holders, connected, before the 500 lost", i, tr)
		}
	}
	slowest := st.Trainers[MaxShownStalled:]
	rates := make([]float64, len(slowest))
	for i, tr := range slowest {
		if tr.Stalled || !tr.Connected || tr.Lost {
			t.Fatalf("slowest %d: %+v", i, tr)
		}
		rates[i] = tr.RecordsPerSecond
	}
	// The idle trainers finished 100 records each, the working ones 10 to
	// 70: the slowest are working ones of 10 records.
	if !slices.IsSorted(rates) || rates[0] != rates[len(rates)-1] || slowest[0].RecordsTotal != 10 {
		t.Errorf("the slowest: rates %v, first %+v", rates, slowest[0])
	}
}

// TestTrainerSeries: per-trainer series are exported for every trainer
// tracked while they are at most TrainerSeries, and for none above; the
// set is the same from one scrape to the next when the trainers are, and
// no counter goes down.
func TestTrainerSeries(t *testing.T) {
	for _, tc := range []struct {
		trainers, series int
		want             int // trainers with series
	}{
		{trainers: 10, series: 10, want: 10},
		{trainers: 11, series: 10, want: 0},
		{trainers: 1000, series: DefaultTrainerSeries, want: 1000},
		{trainers: 1001, series: DefaultTrainerSeries, want: 0},
	} {
		t.Run(fmt.Sprintf("%d trainers, %d series", tc.trainers, tc.series), func(t *testing.T) {
			m, c := newMonitor(Config{TrainerSeries: tc.series})
			m.Lead(running)
			for i := range tc.trainers {
				m.Dispatched(fmt.Sprintf("t-%d", i), ev(i, 0, 10, c.Now()))
			}
			first := trainerSamples(scrapeText(t, m))
			for i := range tc.trainers { // every trainer finishes and takes the next
				at := c.advance(time.Millisecond)
				m.Finished(fmt.Sprintf("t-%d", i), ev(i, 0, 10, at))
				m.Dispatched(fmt.Sprintf("t-%d", i), ev(tc.trainers+i, 0, 10, at))
			}
			second := trainerSamples(scrapeText(t, m))
			if len(first) != tc.want || len(second) != tc.want {
				t.Fatalf("trainers with series: %d then %d, want %d", len(first), len(second), tc.want)
			}
			for name, tasks := range first {
				if again, ok := second[name]; !ok || again != tasks+1 {
					t.Fatalf("%s finished %d tasks, then %d (present %v)", name, tasks, again, ok)
				}
			}
		})
	}
}

// trainerSample is a series of trainmaster_trainer_tasks_total.
var trainerSample = regexp.MustCompile(`(?m)^trainmaster_trainer_tasks_total\{trainer="([^"]+)"\} (\d+)$`)

// trainerSamples returns the value of trainmaster_trainer_tasks_total of
// each trainer in a scrape.
func trainerSamples(text string) map[string]int {
	out := map[string]int{}
	for _, s := range trainerSample.FindAllStringSubmatch(text, -1) {
		var n int
		fmt.Sscan(s[2], &n)
		out[s[1]] = n
	}
	return out
}

// TestKilledTrainers: a trainer killed while it held a task (its
// connection closed, its task taken back as lost) is shown lost and
// stalled, no longer connected, until ForgetAfter after its loss; one
// that comes back is connected again. A trainer that stops calling while
// it holds a task, its connection open, is stalled but still connected.
func TestKilledTrainers(t *testing.T) {
	m, c := newMonitor(Config{StallAfter: 10 * time.Second})
	src := newConnected(running)
	m.Lead(src)
	for i, name := range []string{"killed", "hung", "back"} {
		src.conns[name] = 1
		m.Called(name, c.Now())
		m.Dispatched(name, ev(i, 0, 10, c.Now()))
	}
	at := c.advance(5 * time.Minute)
	for i, name := range map[int]string{0: "killed", 2: "back"} {
		delete(src.conns, name)
		m.Retried(name, ev(i, 0, 10, at), master.CauseLost)
	}
	want := map[string]string{"killed": "lost stalled", "hung": "connected stalled", "back": "lost stalled"}
	checkStanding(t, m, "at the loss", want, 1, 3)

	c.advance(DefaultForgetAfter - 5*time.Second)
	src.conns["back"] = 1
	m.Called("back", c.Now())
	want = map[string]string{"killed": "lost stalled", "hung": "connected stalled", "back": "connected"}
	checkStanding(t, m, "9 min 55 s after the loss", want, 2, 2)

	c.advance(10 * time.Second)
	delete(want, "killed")
	checkStanding(t, m, "10 min 5 s after the loss", want, 2, 1)
	if strings.Contains(scrapeText(t, m), `trainer="killed"`) {
		t.Error("the forgotten trainer still has series")
	}
}

// checkStanding checks the standing of each trainer the status shows, and
// the counts of those connected and stalled.
func checkStanding(t *testing.T, m *Monitor, when string, want map[string]string, connected, stalled int) {
	t.Helper()
	st := m.Status()
	got := map[string]string{}
	for _, tr := range st.Trainers {
		var words []string
		for _, w := range []struct {
			on   bool
			word string
		}{{tr.Lost, "lost"}, {tr.Connected, "connected"}, {tr.Stalled, "stalled"}} {
			if w.on {
				words = append(words, w.word)
			}
		}
		got[tr.Name] = strings.Join(words, " ")
	}
	if fmt.Sprint(got) != fmt.Sprint(want) || st.TrainersConnected != connected || st.TrainersStalled != stalled {
		t.Errorf("%s: %v, %d connected, %d stalled; want %v, %d, %d", when, got, st.TrainersConnected, st.TrainersStalled,
			want, connected, stalled)
	}
}

// TestGoneWhileTasksAreLong: with tasks held a minute, a trainer is
// stalled after 3 minutes of silence; one that holds nothing and closed
// its connection is neither connected nor stalled until then. One holding
// a task, its connection open, stays connected.
func TestGoneWhileTasksAreLong(t *testing.T) {
	m, c := newMonitor(Config{StallAfter: 10 * time.Second})
	src := newConnected(running)
	m.Lead(src)
	src.conns["left"], src.conns["busy"] = 1, 1
	m.Dispatched("left", ev(0, 0, 10, c.Now()))
	m.Dispatched("busy", ev(1, 0, 10, c.Now()))
	at := c.advance(time.Minute)
	m.Finished("left", ev(0, 0, 10, at)) // held a minute: stalled after 3
	delete(src.conns, "left")
	m.Dispatched("busy", ev(2, 0, 10, at))
	c.advance(30 * time.Second)
	checkStanding(t, m, "30 s later", map[string]string{"left": "", "busy": "connected"}, 1, 0)
	c.advance(3 * time.Minute)
	checkStanding(t, m, "3 min 30 s later", map[string]string{"left": "stalled", "busy": "connected stalled"}, 1, 2)
}
