package monitor

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/sirupsen/logrus"

	"github.com/trainmaster/master/go/recordio"
	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/master"
	"github.com/trainmaster/master/internal/taskqueue"
)

// clock is the monitor's time, moved by the test.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return c.now
}

func newMonitor(cfg Config) (*Monitor, *clock) {
	c := &clock{now: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)}
	cfg.Now = c.Now
	return New(cfg), c
}

func ev(task, pass int, records int64, at time.Time) master.TaskEvent {
	return master.TaskEvent{Index: task, Pass: pass, Epoch: 1, Records: records, At: at}
}

func trainerNamed(t *testing.T, st Status, name string) TrainerStatus {
	t.Helper()
	for _, tr := range st.Trainers {
		if tr.Name == name {
			return tr
		}
	}
	t.Fatalf("no trainer %q in %+v", name, st.Trainers)
	return TrainerStatus{}
}

// TestTrainerFigures: what is charged to whom. A finish counts to the
// trainer that reports it, a timeout to the trainer the task was
// dispatched to, a failure to the reporter; pass figures start again with
// each pass; the held task is the oldest one.
func TestTrainerFigures(t *testing.T) {
	m, c := newMonitor(Config{})
	t0 := c.Now()
	m.Called("a", t0)
	m.Dispatched("a", ev(1, 0, 100, t0))
	m.Dispatched("a", ev(2, 0, 100, t0.Add(time.Second))) // prefetched
	m.Dispatched("b", ev(3, 0, 50, t0))
	at := c.advance(5 * time.Second)
	m.Finished("a", ev(1, 0, 100, at))
	m.Retried("", master.TaskEvent{Index: 3, Pass: 0, At: at, Reason: "dispatch 1 timed out after 5s", Timeouts: 1}, master.CauseTimedOut)
	m.Dispatched("c", ev(3, 0, 50, at))
	m.Retried("c", master.TaskEvent{Index: 3, Pass: 0, At: at, Reason: "disk", Timeouts: 2, Discarded: true}, master.CauseFailed)

	st := m.Status()
	a := trainerNamed(t, st, "a")
	if a.TasksPass != 1 || a.RecordsPass != 100 || a.TasksTotal != 1 || a.Holding != 1 || a.Task == nil || a.Task.Index != 2 ||
		a.Task.HeldSeconds != 4 || a.Stalled {
		t.Errorf("a: %+v (task %+v)", a, a.Task)
	}
	if want := 100.0 / 5; a.RecordsPerSecond != want {
		t.Errorf("a's rate %v, want %v (100 records in the 5 s since it was first seen)", a.RecordsPerSecond, want)
	}
	b := trainerNamed(t, st, "b")
	if b.Timeouts != 1 || b.Holding != 0 || b.Failures != 0 {
		t.Errorf("b (its task 3 timed out): %+v", b)
	}
	if cc := trainerNamed(t, st, "c"); cc.Failures != 1 || cc.Holding != 0 {
		t.Errorf("c (reported 3 failed): %+v", cc)
	}
	if len(st.Events) != 2 || st.Events[0].Trainer != "c" || !st.Events[0].Discarded || st.Events[1].Trainer != "b" || st.Events[1].Cause != "timed out" {
		t.Errorf("events, newest first: %+v", st.Events)
	}

	at = c.advance(time.Second)
	m.Finished("a", ev(2, 1, 100, at)) // a pass later
	a = trainerNamed(t, m.Status(), "a")
	if a.TasksPass != 1 || a.TasksTotal != 2 || a.RecordsTotal != 200 || a.Task != nil {
		t.Errorf("a after a finish in pass 1: %+v", a)
	}
}

// TestStalled: a trainer is stalled when it stays silent longer than
// StallAfter (or 3 times the mean hold of a task, when longer), or when a
// task it held timed out since its last call; a call clears the second.
func TestStalled(t *testing.T) {
	m, c := newMonitor(Config{StallAfter: 10 * time.Second})
	svc := jobService(t)
	m.Leading(svc)
	t0 := c.Now()
	m.Dispatched("slow", ev(0, 0, 10, t0))
	m.Dispatched("quick", ev(1, 0, 10, t0))
	m.Dispatched("lost", ev(2, 0, 10, t0))
	c.advance(2 * time.Second)
	m.Finished("quick", ev(1, 0, 10, c.Now())) // held 2 s: stall after max(10 s, 6 s)
	m.Retried("", master.TaskEvent{Index: 2, At: c.Now()}, master.CauseTimedOut)
	stalled := func() map[string]bool {
		got := map[string]bool{}
		for _, tr := range m.Status().Trainers {
			got[tr.Name] = tr.Stalled
		}
		return got
	}
	if got := stalled(); got["slow"] || got["quick"] || !got["lost"] {
		t.Errorf("2 s in: %v", got)
	}
	c.advance(9 * time.Second)
	m.Called("lost", c.Now())
	m.Called("quick", c.Now())
	if got := stalled(); !got["slow"] || got["quick"] || got["lost"] {
		t.Errorf("11 s in, slow silent since the start: %v", got)
	}
	if first := m.Status().Trainers[0]; first.Name != "slow" {
		t.Errorf("the stalled trainer is not listed first: %+v", m.Status().Trainers)
	}
	m.Leading(nil)
	if got := stalled(); got["slow"] {
		t.Errorf("stalled shown on a standby: %v", got)
	}
}

// TestTrainersBounded: a client that invents a name per call makes the
// monitor keep at most MaxTrainers trainers, the least recently seen
// dropped first; silent trainers are forgotten after ForgetAfter unless
// they hold a task.
func TestTrainersBounded(t *testing.T) {
	m, c := newMonitor(Config{MaxTrainers: 3, ForgetAfter: time.Minute})
	m.Dispatched("holder", ev(7, 0, 1, c.Now()))
	for i := range 100_000 {
		m.Called(fmt.Sprintf("attacker-%d", i), c.Now())
	}
	st := m.Status()
	if st.TrainersTotal != 3 || len(m.trainers.holders) > 1 {
		t.Fatalf("%d trainers kept, %d holders, want 3 and at most 1", st.TrainersTotal, len(m.trainers.holders))
	}
	for _, tr := range st.Trainers {
		if !strings.HasPrefix(tr.Name, "attacker-999") {
			t.Errorf("kept %q, not one of the latest", tr.Name)
		}
	}
	m2, c2 := newMonitor(Config{ForgetAfter: time.Minute})
	m2.Dispatched("holder", ev(7, 0, 1, c2.Now())) // least recently seen: not in the way of the others
	m2.Called("gone", c2.Now())
	c2.advance(2 * time.Minute)
	m2.Called("here", c2.Now())
	if st := m2.Status(); st.TrainersTotal != 2 || trainerNamed(t, st, "holder").Holding != 1 {
		t.Errorf("after 2 silent minutes: %+v", st.Trainers)
	}
}

// TestRateAndETA: the job's rate is taken over the last minute (or since
// this master leads, when shorter), its history in 10-second slots since
// the monitor started, and the ETAs follow from it.
func TestRateAndETA(t *testing.T) {
	m, c := newMonitor(Config{})
	svc := jobService(t) // 4 tasks of 3 records, 2 passes
	c.advance(5 * time.Minute)
	m.Leading(svc)
	if st := m.Status(); st.Job == nil || st.Job.PassETASeconds != nil || st.Job.Records != 12 || st.Job.Tasks != 4 {
		t.Fatalf("before any finish: %+v", st.Job)
	}
	for range 6 { // 2 records a second for 30 s
		at := c.advance(5 * time.Second)
		m.Finished("a", ev(0, 0, 10, at))
	}
	st := m.Status()
	if st.Job.RecordsPerSecond != 2 {
		t.Errorf("rate %v, want 2 (60 records in the 30 s since it leads)", st.Job.RecordsPerSecond)
	}
	// Nothing is done in the service: 12 records left in this pass, 12 in the next.
	if *st.Job.PassETASeconds != 6 || *st.Job.JobETASeconds != 12 {
		t.Errorf("ETAs %v and %v, want 6 and 12", *st.Job.PassETASeconds, *st.Job.JobETASeconds)
	}
	if n := len(st.Rate); n != 32 { // 5.5 minutes of whole 10 s slots since the start
		t.Errorf("%d rate points, want 32", n)
	}
	var sum float64
	for _, p := range st.Rate {
		sum += p.RecordsPerSecond * 10
	}
	if sum != 50 { // the finish in the current, unfinished slot is not shown yet
		t.Errorf("the history holds %v records, want 50", sum)
	}
	c.advance(40 * time.Minute)
	if st := m.Status(); len(st.Rate) != historySlots-1 || st.Job.RecordsPerSecond != 0 || st.Job.PassETASeconds != nil {
		t.Errorf("40 minutes later: %d points, rate %v", len(st.Rate), st.Job.RecordsPerSecond)
	}
}

// TestMetrics: the metrics pass Prometheus' own lint, and say what the
// monitor was told; a standby exports leader 0 and no queue.
func TestMetrics(t *testing.T) {
	m, c := newMonitor(Config{})
	col := m.Collector()
	if problems, err := testutil.CollectAndLint(col); err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %+v", err, problems)
	}
	standby := `
# HELP trainmaster_leader 1 while this master leads and serves trainers, 0 while it stands by.
# TYPE trainmaster_leader gauge
trainmaster_leader 0
`
	if err := testutil.CollectAndCompare(col, strings.NewReader(standby), "trainmaster_leader", "trainmaster_tasks"); err != nil {
		t.Error(err)
	}
	m.Leading(jobService(t))
	m.Dispatched("a", ev(0, 0, 3, c.Now()))
	m.Finished("a", ev(0, 0, 3, c.Now()))
	m.Retried("", master.TaskEvent{Index: 1, Discarded: true, At: c.Now()}, master.CauseTimedOut)
	m.Committed(time.Millisecond, 2, master.ErrLeadershipLost)
	leader := `
# HELP trainmaster_leader 1 while this master leads and serves trainers, 0 while it stands by.
# TYPE trainmaster_leader gauge
trainmaster_leader 1
# HELP trainmaster_tasks Tasks of the current pass in each queue.
# TYPE trainmaster_tasks gauge
trainmaster_tasks{queue="done"} 0
trainmaster_tasks{queue="failed"} 0
trainmaster_tasks{queue="pending"} 0
trainmaster_tasks{queue="todo"} 4
# HELP trainmaster_records_done_total Records of the tasks finished by trainers, while this process led.
# TYPE trainmaster_records_done_total counter
trainmaster_records_done_total 3
# HELP trainmaster_discards_total Tasks discarded for their pass after too many timeouts and failures.
# TYPE trainmaster_discards_total counter
trainmaster_discards_total 1
# HELP trainmaster_fenced_writes_rejected_total Commits etcd rejected because this master no longer held the lock.
# TYPE trainmaster_fenced_writes_rejected_total counter
trainmaster_fenced_writes_rejected_total 1
# HELP trainmaster_trainer_tasks_total Tasks the trainer finished since this master first saw it.
# TYPE trainmaster_trainer_tasks_total counter
trainmaster_trainer_tasks_total{trainer="a"} 1
`
	if err := testutil.CollectAndCompare(col, strings.NewReader(leader), "trainmaster_leader", "trainmaster_tasks",
		"trainmaster_records_done_total", "trainmaster_discards_total", "trainmaster_fenced_writes_rejected_total",
		"trainmaster_trainer_tasks_total"); err != nil {
		t.Error(err)
	}
	m.GetTaskServed(time.Millisecond, nil)
	m.GetTaskServed(time.Millisecond, wire.ErrNoTask)
	m.GetTaskServed(time.Millisecond, fmt.Errorf("%w: etcd down", wire.ErrNotServing))
	m.GetTaskServed(time.Millisecond, fmt.Errorf("%w: etcd down", wire.ErrNotServing))
	if n := testutil.CollectAndCount(col, "trainmaster_commit_duration_seconds", "trainmaster_get_task_duration_seconds"); n != 5 {
		t.Errorf("%d histograms, want commit and GetTask's 4 results", n)
	}
}

// jobService is a service with a dataset of 4 tasks of 3 records and 2
// passes, accepted and untouched.
func jobService(t *testing.T) *master.Service {
	t.Helper()
	path := filepath.Join(t.TempDir(), "data.recordio")
	record := func(i int) []byte { return fmt.Appendf(nil, "record %02d", i) }
	if err := recordio.WriteFile(path, 12, record, recordio.WithMaxChunkBytes(3*len(record(0)))); err != nil {
		t.Fatal(err)
	}
	log := logrus.New()
	log.SetLevel(logrus.ErrorLevel)
	svc, err := master.New(master.Config{ChunksPerTask: 1, Log: log, Queue: taskqueue.Config{Passes: 2}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Close)
	if err := svc.ReportDataset(context.Background(), []string{path}); err != nil {
		t.Fatal(err)
	}
	return svc
}
