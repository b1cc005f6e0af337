package monitor

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/sirupsen/logrus"

	"github.com/trainmaster/master/go/recordio"
	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/master"
	"github.com/trainmaster/master/internal/rendezvous"
	"github.com/trainmaster/master/internal/statusapi"
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

// AfterFunc makes clock a master.Clock whose timers never fire: a
// service on it times nothing out.
func (c *clock) AfterFunc(time.Duration, func()) master.Timer { return stopped{} }

type stopped struct{}

func (stopped) Stop() bool { return true }

func newMonitor(cfg Config) (*Monitor, *clock) {
	c := &clock{now: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)}
	cfg.Now = c.Now
	return New(cfg), c
}

func ev(task, pass int, records int64, at time.Time) master.TaskEvent {
	return master.TaskEvent{Index: task, Pass: pass, Epoch: 1, Records: records, At: at}
}

func trainerNamed(t *testing.T, st statusapi.Status, name string) statusapi.TrainerStatus {
	t.Helper()
	for _, tr := range st.Trainers {
		if tr.Name == name {
			return tr
		}
	}
	t.Fatalf("no trainer %q in %+v", name, st.Trainers)
	return statusapi.TrainerStatus{}
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
	m.Lead(svc)
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
	m.Lead(nil)
	if got := stalled(); got["slow"] {
		t.Errorf("stalled shown on a standby: %v", got)
	}
}

// TestTrainersBounded: a client that invents a name per call makes the
// monitor keep at most MaxTrainers trainers, the least recently seen
// dropped first but for the trainer holding a task; silent trainers are
// forgotten after ForgetAfter unless they hold a task.
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
		if !strings.HasPrefix(tr.Name, "attacker-999") && tr.Name != "holder" {
			t.Errorf("kept %q, not one of the latest", tr.Name)
		}
	}
	if trainerNamed(t, st, "holder").Holding != 1 {
		t.Errorf("the holder lost its task: %+v", st.Trainers)
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
	m.Lead(svc)
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
	m.Lead(jobService(t))
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
	return trainService(t, master.Config{})
}

// trainService is a service configured by cfg, with jobService's dataset
// as train.
func trainService(t *testing.T, cfg master.Config) *master.Service {
	t.Helper()
	path := filepath.Join(t.TempDir(), "data.recordio")
	record := func(i int) []byte { return fmt.Appendf(nil, "record %02d", i) }
	if err := recordio.WriteFile(path, 12, record, recordio.WithMaxChunkBytes(3*len(record(0)))); err != nil {
		t.Fatal(err)
	}
	log := logrus.New()
	log.SetLevel(logrus.ErrorLevel)
	cfg.ChunksPerTask, cfg.Log, cfg.Queue = 1, log, taskqueue.Config{Passes: 2}
	svc, err := master.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Close)
	if err := svc.ReportDataset(context.Background(), []string{path}); err != nil {
		t.Fatal(err)
	}
	return svc
}

// twoDatasets is a service on c telling m, with train (4 tasks of 3
// records, 2 passes, as jobService) and eval, an index-range dataset of 25
// records in tasks of 10 (3 tasks), 1 pass a round.
func twoDatasets(t *testing.T, m *Monitor, c *clock) *master.Service {
	t.Helper()
	svc := trainService(t, master.Config{Observer: m, Clock: c})
	if err := svc.DeclareDataset(context.Background(), wire.Dataset{Name: "eval", Records: 25, RecordsPerTask: 10, Passes: 1}); err != nil {
		t.Fatal(err)
	}
	return svc
}

// TestDatasets: a job of train and eval. The status shows train as the
// job, as before, and eval beside it; each has its own rate and ETAs; the
// tasks of both, numbered each from 0, are told apart; a trainer's pass
// figures are train's, its totals count both; the metrics describe each
// dataset, the series without a dataset label train alone.
func TestDatasets(t *testing.T) {
	m, c := newMonitor(Config{})
	svc := twoDatasets(t, m, c)
	m.Lead(svc)
	ctx := context.Background()
	train, err := svc.GetTask(ctx, wire.Task{Trainer: "a"})
	if err != nil {
		t.Fatal(err)
	}
	eval, err := svc.GetTask(ctx, wire.Task{Dataset: "eval", Trainer: "e"})
	if err != nil {
		t.Fatal(err)
	}
	if train.Index != eval.Index {
		t.Fatalf("train's task %d, eval's %d: the test wants the same index in both", train.Index, eval.Index)
	}
	st := m.Status()
	if a, e := trainerNamed(t, st, "a"), trainerNamed(t, st, "e"); a.Task == nil || a.Task.Dataset != "train" || a.Holding != 1 ||
		e.Task == nil || e.Task.Dataset != "eval" || e.Task.Index != eval.Index || e.Holding != 1 {
		t.Fatalf("held: a %+v (%+v), e %+v (%+v)", a, a.Task, e, e.Task)
	}

	c.advance(10 * time.Second)
	eval.Trainer = "e"
	if eval, err = svc.GetTask(ctx, eval); err != nil { // finishes eval's task, takes the next
		t.Fatal(err)
	}
	train.Trainer = "a"
	if _, err := svc.TaskFinished(ctx, train); err != nil {
		t.Fatal(err)
	}
	st = m.Status()
	j := st.Job
	if j == nil || j.Name != "train" || j.Round != 0 || j.RecordsPerTask != 0 || j.Tasks != 4 || j.Records != 12 || j.Done != 1 || j.Todo != 3 || j.RecordsDone != 3 {
		t.Fatalf("job: %+v", j)
	}
	near := func(what string, got *float64, want float64) {
		t.Helper()
		if got == nil || math.Abs(*got-want) > 1e-9 {
			t.Errorf("%s: %v, want %v", what, got, want)
		}
	}
	// 3 records of train in the 10 s since it leads: 9 left in this
	// pass, 12 in the next; 10 of eval, 15 left in its one pass.
	near("train's rate", &j.RecordsPerSecond, 0.3)
	near("train's pass ETA", j.PassETASeconds, 30)
	near("train's job ETA", j.JobETASeconds, 70)
	if len(st.Datasets) != 1 {
		t.Fatalf("datasets: %+v", st.Datasets)
	}
	d := st.Datasets[0]
	if d.Name != "eval" || d.RecordsPerTask != 10 || d.Records != 25 || d.Tasks != 3 || d.Files != 0 || d.Dataset == nil || len(d.Dataset) != 0 ||
		d.Pass != 0 || d.Passes != 1 || d.Todo != 1 || d.Pending != 1 || d.Done != 1 || d.RecordsDone != 10 {
		t.Errorf("eval: %+v", d)
	}
	near("eval's rate", &d.RecordsPerSecond, 1)
	near("eval's pass ETA", d.PassETASeconds, 15)
	near("eval's job ETA", d.JobETASeconds, 15)
	if a := trainerNamed(t, st, "a"); a.TasksPass != 1 || a.RecordsPass != 3 || a.TasksTotal != 1 || a.Holding != 0 {
		t.Errorf("a: %+v", a)
	}
	if e := trainerNamed(t, st, "e"); e.TasksPass != 0 || e.RecordsPass != 0 || e.TasksTotal != 1 || e.RecordsTotal != 10 ||
		e.RecordsPerSecond != 1 || e.Task == nil || e.Task.Dataset != "eval" || e.Task.Index != eval.Index {
		t.Errorf("e (eval's tasks count in its totals, not in train's pass): %+v %+v", e, e.Task)
	}

	// The JSON: train as before, with its name; eval in datasets.
	raw, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Job      map[string]any   `json:"job"`
		Datasets []map[string]any `json:"datasets"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Job["name"] != "train" || doc.Job["tasks"] != 4.0 || doc.Job["records_per_pass"] != 12.0 {
		t.Errorf("job in JSON: %v", doc.Job)
	}
	for _, absent := range []string{"round", "records_per_task"} {
		if _, ok := doc.Job[absent]; ok {
			t.Errorf("job in JSON has %q: %v", absent, doc.Job)
		}
	}
	if len(doc.Datasets) != 1 || doc.Datasets[0]["name"] != "eval" || doc.Datasets[0]["records_per_task"] != 10.0 ||
		doc.Datasets[0]["records_per_pass"] != 25.0 || fmt.Sprint(doc.Datasets[0]["dataset"]) != "[]" || doc.Datasets[0]["todo"] != 1.0 {
		t.Errorf("datasets in JSON: %v", doc.Datasets)
	}

	// A failure of an eval task is an event of eval.
	eval.Error, eval.Trainer = "bad range", "e"
	if _, err := svc.TaskFailed(ctx, eval); err != nil {
		t.Fatal(err)
	}
	if ev := m.Status().Events; len(ev) != 1 || ev[0].Dataset != "eval" || ev[0].Task != eval.Index || ev[0].Trainer != "e" || !strings.Contains(ev[0].Reason, "bad range") {
		t.Errorf("events: %+v", ev)
	}
	// eval's round over, round 1 starts.
	for finished := (wire.Task{Dataset: "eval", Trainer: "e"}); ; {
		task, err := svc.GetTask(ctx, finished)
		if wire.Is(err, wire.TextAllDone) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		task.Trainer, finished = "e", task
	}
	if round, err := svc.StartRound(ctx, wire.Round{Dataset: "eval", Round: 1}); err != nil || round != 1 {
		t.Fatalf("round 1: %d, %v", round, err)
	}
	if d := m.Status().Datasets[0]; d.Round != 1 || d.Pass != 1 || d.Passes != 2 || d.Todo != 3 || d.AllDone {
		t.Errorf("eval in round 1: %+v", d)
	}

	col := m.Collector()
	if problems, err := testutil.CollectAndLint(col); err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %+v", err, problems)
	}
	want := `
# HELP trainmaster_tasks Tasks of the current pass in each queue.
# TYPE trainmaster_tasks gauge
trainmaster_tasks{queue="done"} 1
trainmaster_tasks{queue="failed"} 0
trainmaster_tasks{queue="pending"} 0
trainmaster_tasks{queue="todo"} 3
# HELP trainmaster_pass_records_done Records of the tasks done in the current pass.
# TYPE trainmaster_pass_records_done gauge
trainmaster_pass_records_done 3
# HELP trainmaster_dataset_pass The dataset's current pass, from 0; equals trainmaster_dataset_passes once all are done.
# TYPE trainmaster_dataset_pass gauge
trainmaster_dataset_pass{dataset="eval"} 1
trainmaster_dataset_pass{dataset="train"} 0
# HELP trainmaster_dataset_passes Passes over the dataset in the rounds started so far.
# TYPE trainmaster_dataset_passes gauge
trainmaster_dataset_passes{dataset="eval"} 2
trainmaster_dataset_passes{dataset="train"} 2
# HELP trainmaster_dataset_round The dataset's current round, from 0: each round runs its passes again.
# TYPE trainmaster_dataset_round gauge
trainmaster_dataset_round{dataset="eval"} 1
trainmaster_dataset_round{dataset="train"} 0
# HELP trainmaster_dataset_queue_tasks Tasks of the dataset's current pass in each queue.
# TYPE trainmaster_dataset_queue_tasks gauge
trainmaster_dataset_queue_tasks{dataset="eval",queue="done"} 0
trainmaster_dataset_queue_tasks{dataset="eval",queue="failed"} 0
trainmaster_dataset_queue_tasks{dataset="eval",queue="pending"} 0
trainmaster_dataset_queue_tasks{dataset="eval",queue="todo"} 3
trainmaster_dataset_queue_tasks{dataset="train",queue="done"} 1
trainmaster_dataset_queue_tasks{dataset="train",queue="failed"} 0
trainmaster_dataset_queue_tasks{dataset="train",queue="pending"} 0
trainmaster_dataset_queue_tasks{dataset="train",queue="todo"} 3
# HELP trainmaster_dataset_pass_records_done Records of the tasks done in the dataset's current pass.
# TYPE trainmaster_dataset_pass_records_done gauge
trainmaster_dataset_pass_records_done{dataset="eval"} 0
trainmaster_dataset_pass_records_done{dataset="train"} 3
`
	if err := testutil.CollectAndCompare(col, strings.NewReader(want), "trainmaster_tasks", "trainmaster_pass_records_done",
		"trainmaster_dataset_pass", "trainmaster_dataset_passes", "trainmaster_dataset_round", "trainmaster_dataset_queue_tasks",
		"trainmaster_dataset_pass_records_done"); err != nil {
		t.Error(err)
	}

	// A standby shows no dataset.
	m.Lead(nil)
	if st := m.Status(); st.Job != nil || st.Datasets != nil {
		t.Errorf("standby: job %+v, datasets %+v", st.Job, st.Datasets)
	}
	if raw, _ := json.Marshal(m.Status()); strings.Contains(string(raw), `"datasets"`) {
		t.Errorf("standby's JSON names datasets: %s", raw)
	}
	if n := testutil.CollectAndCount(col, "trainmaster_dataset_pass", "trainmaster_dataset_queue_tasks"); n != 0 {
		t.Errorf("a standby exports %d dataset series", n)
	}
}

// jobSource is a leading service reduced to what the monitor reads.
type jobSource []master.JobState

func (s jobSource) Jobs() []master.JobState                   { return s }
func (s jobSource) Checkpoints() master.CheckpointsState      { return master.CheckpointsState{} }
func (s jobSource) RendezvousRuns() map[string]rendezvous.Run { return nil }
func (s jobSource) ConnectedTrainers() map[string]int         { return nil }

// connected is a leading service with the connections of its trainers:
// the ones the test opened and did not close.
type connected struct {
	jobSource
	conns map[string]int
}

func newConnected(jobs jobSource) *connected {
	return &connected{jobSource: jobs, conns: map[string]int{}}
}

func (s *connected) ConnectedTrainers() map[string]int { return maps.Clone(s.conns) }

// TestLeadAnySource: the monitor shows the datasets of whatever JobSource
// leads, train as the job and the others beside it, with the ETAs of
// their rates; Lead(nil) makes it a standby.
func TestLeadAnySource(t *testing.T) {
	m, c := newMonitor(Config{})
	m.Lead(jobSource{
		{Name: "eval", RecordsPerTask: 10, Tasks: 3, Records: 25, Passes: 1, Todo: 3},
		{Name: wire.DefaultDataset, Patterns: []string{"/d/*"}, Files: 1, Chunks: 4, ChunksPerTask: 1, Tasks: 4, Records: 12,
			Pass: 1, Passes: 3, Todo: 2, Done: 2, RecordsDone: 6},
	})
	c.advance(time.Second)
	m.Finished("a", master.TaskEvent{Dataset: wire.DefaultDataset, Index: 1, Pass: 1, Records: 6, At: c.Now()})
	c.advance(5 * time.Second)
	st := m.Status()
	if !st.Leading || st.Job == nil || st.Job.Todo != 2 || len(st.Datasets) != 1 || st.Datasets[0].Name != "eval" {
		t.Fatalf("leading: %+v", st)
	}
	if j := st.Job; j.RecordsPerSecond <= 0 || j.PassETASeconds == nil || *j.PassETASeconds != 6/j.RecordsPerSecond ||
		*j.JobETASeconds != 18/j.RecordsPerSecond {
		t.Errorf("train's rate %v, ETAs %v %v", j.RecordsPerSecond, j.PassETASeconds, j.JobETASeconds)
	}
	if d := st.Datasets[0]; d.PassETASeconds != nil || d.Dataset == nil {
		t.Errorf("eval, which finished nothing: %+v", d)
	}
	m.Lead(nil)
	if st := m.Status(); st.Leading || st.Job != nil {
		t.Errorf("standby: %+v", st)
	}
}

// TestFollowLeadsForTheTerm: Follow leads with the term's source until the
// term's context ends, then stands by, and only then returns.
func TestFollowLeadsForTheTerm(t *testing.T) {
	m, _ := newMonitor(Config{})
	ctx, end := context.WithCancel(context.Background())
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		m.Follow(ctx, jobSource{{Name: wire.DefaultDataset, Tasks: 1, Passes: 1, Todo: 1}})
	}()
	for !m.Status().Leading {
		runtime.Gosched()
	}
	select {
	case <-returned:
		t.Fatal("Follow returned while the term's context lives")
	default:
	}
	end()
	<-returned
	if st := m.Status(); st.Leading || st.Job != nil {
		t.Errorf("after the term: %+v", st)
	}
}
