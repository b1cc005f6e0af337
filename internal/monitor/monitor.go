// Package monitor keeps what a master shows of its job (statusapi.Status):
// per-trainer figures, the rate of records over the last 30 minutes, the
// latest failures and timeouts, and counters for Prometheus (metrics.go).
// It is a master.Observer, told of every durable change of every dataset
// of the job; and it is told of each term (Lead), so that it can read the
// leading service's queues (a JobSource) when asked.
//
// The job's figures (Status.Job, the metrics without a dataset label) are
// those of the dataset train; the others (an evaluation dataset, say) are
// shown beside it (Status.Datasets, the trainmaster_dataset_* metrics with
// a dataset label). What counts tasks rather than describes a dataset counts them
// all: the counters, the rate history, each trainer's totals and rate.
//
// What it promises: everything is in memory and bounded whatever trainers
// send (at most Config.MaxTrainers trainers that hold no task, least
// recently touched dropped first, and every trainer that holds one, never
// dropped: there are no more of those than tasks pending; trainers silent
// for Config.ForgetAfter dropped unless they hold a task; MaxEvents
// events); nothing is written to etcd. Up to that bound every trainer is
// counted exactly (census.go), and Status says how many trainers called
// lately but are not tracked for want of room. Per-trainer series are
// exported for every trainer tracked while they are at most
// Config.TrainerSeries, and for none above (metrics.go). After a failover
// the new leader's monitor starts empty and fills as trainers call it;
// counters count what this process did, from its start, across its terms.
package monitor

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/pkg/errors"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/master"
	"github.com/trainmaster/master/internal/rendezvous"
	"github.com/trainmaster/master/internal/statusapi"
	"github.com/trainmaster/master/internal/taskqueue"
)

// Config configures a Monitor. Zero fields take the defaults.
type Config struct {
	Now func() time.Time // default time.Now
	// MaxTrainers bounds the trainers tracked (-max-trainers), but for
	// those holding a task, which are all tracked; default 50,000.
	MaxTrainers int
	// TrainerSeries is how many trainers tracked, at most, have series of
	// their own in the metrics (-max-trainers-shown): all of them up to
	// it, none above; default 1000.
	TrainerSeries int
	// ForgetAfter drops a trainer that holds no task when it has neither
	// called nor had a task taken back for this long; default 10 minutes.
	ForgetAfter time.Duration
	// StallAfter is the shortest silence that marks a trainer stalled; it
	// is raised to 3 times the mean time a task is held. Default 10 s.
	StallAfter time.Duration
}

// Defaults and bounds.
const (
	DefaultMaxTrainers   = 50_000
	DefaultTrainerSeries = 1000
	DefaultForgetAfter   = 10 * time.Minute
	DefaultStallAfter    = 10 * time.Second
	// MaxEvents is how many events Status.Events keeps.
	MaxEvents = 50
	// The job's rate history: 180 slots of 10 s, 30 minutes.
	historySlot  = 10 * time.Second
	historySlots = 180
	// maxRateDatasets bounds the datasets whose rate is kept apart. The
	// names come from the service, which bounds the datasets of a job
	// (-max-datasets); a dataset beyond this has no rate and no ETA.
	maxRateDatasets = 1024
)

// Monitor implements master.Observer. Its methods are safe for concurrent
// use and hold its lock only briefly; Status and the metrics read the
// leading service's queues (JobSource.Jobs) outside it.
type Monitor struct {
	cfg     Config
	metrics *metrics

	mu       sync.Mutex // guards the fields below
	jobs     JobSource  // the leading term's service; nil on a standby
	trainers *trainers
	history  window             // finishes of every dataset: Status.Rate
	rates    map[string]*window // finishes of each dataset, over rateSpan: its RecordsPerSecond and ETAs
	born     time.Time          // when the monitor was made: the rate history starts there
	started  time.Time          // when this process last started leading
	events   []statusapi.Event  // newest last, at most MaxEvents
	counts   counts
	held     meanHold
}

// counts are the monitor's counters, exported as Prometheus counters; they
// count the tasks of every dataset.
type counts struct {
	dispatches, finishes, records, failures, timeouts, lost, discards, rejected int64
	splits, backups                                                             int64 // stragglers relieved
	checkpoints, rewinds                                                        int64 // data checkpoints stored, datasets rewound
}

// meanHold is a moving mean of how long tasks are held, dispatch to finish.
type meanHold struct {
	mean float64 // seconds
	n    int
}

func (m *meanHold) add(d time.Duration) {
	const window = 100
	m.n = min(m.n+1, window)
	m.mean += (d.Seconds() - m.mean) / float64(m.n)
}

// New returns a Monitor.
func New(cfg Config) *Monitor {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MaxTrainers <= 0 {
		cfg.MaxTrainers = DefaultMaxTrainers
	}
	if cfg.TrainerSeries <= 0 {
		cfg.TrainerSeries = DefaultTrainerSeries
	}
	if cfg.ForgetAfter <= 0 {
		cfg.ForgetAfter = DefaultForgetAfter
	}
	if cfg.StallAfter <= 0 {
		cfg.StallAfter = DefaultStallAfter
	}
	return &Monitor{cfg: cfg, metrics: newMetrics(), trainers: newTrainers(cfg.MaxTrainers),
		history: newWindow(historySlot, historySlots), rates: map[string]*window{}, born: cfg.Now()}
}

// JobSource is what the monitor reads of the leading term's service: the
// state of each of its datasets, and the data checkpoints it keeps.
// master.Service implements it.
type JobSource interface {
	Jobs() []master.JobState
	Checkpoints() master.CheckpointsState
	RendezvousRuns() map[string]rendezvous.Run
	// ConnectedTrainers returns the named trainers with a connection open,
	// and how many each has.
	ConnectedTrainers() map[string]int
}

// Lead tells the monitor that jobs is the leading service of a new term;
// Lead(nil) that the term ended and it stands by.
func (m *Monitor) Lead(jobs JobSource) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.jobs = jobs
	m.trainers.newTerm()
	if jobs != nil {
		m.started = m.cfg.Now()
	}
}

// Follow leads with jobs until ctx, the term's context, ends, then stands
// by: leader.Config.Term's shape.
func (m *Monitor) Follow(ctx context.Context, jobs JobSource) {
	m.Lead(jobs)
	<-ctx.Done()
	m.Lead(nil)
}

// source returns the leading service, nil on a standby.
func (m *Monitor) source() JobSource {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.jobs
}

// Called implements master.Observer.
func (m *Monitor) Called(name string, at time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if t := m.trainers.seen(name, at); t != nil {
		t.timedOut, t.lost = false, false
	}
}

// Dispatched implements master.Observer.
func (m *Monitor) Dispatched(name string, ev master.TaskEvent) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.counts.dispatches++
	m.trainers.hold(m.trainers.holder(name, ev.At), key(ev), ev.Pass, ev.At)
}

// Finished implements master.Observer.
func (m *Monitor) Finished(name string, ev master.TaskEvent) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.counts.finishes++
	m.counts.records += ev.Records
	m.history.add(ev.At, ev.Records)
	task := key(ev)
	m.addRate(task.dataset, ev.At, ev.Records)
	if holder, since := m.trainers.release(task, ev.At); holder != nil {
		m.held.add(ev.At.Sub(since))
	}
	if t := m.trainers.seen(name, ev.At); t != nil {
		t.finished(task.dataset, ev.Pass, ev.Records, ev.At)
	}
}

// addRate counts records finished at at to dataset's rate. Called with
// m.mu held.
func (m *Monitor) addRate(dataset string, at time.Time, records int64) {
	w := m.rates[dataset]
	if w == nil {
		if len(m.rates) >= maxRateDatasets {
			return
		}
		nw := newWindow(historySlot, int(rateSpan/historySlot))
		w = &nw
		m.rates[dataset] = w
	}
	w.add(at, records)
}

// rate returns dataset's records per second over rateSpan at now. Called
// with m.mu held.
func (m *Monitor) rate(dataset string, now time.Time) float64 {
	w := m.rates[dataset]
	if w == nil {
		return 0
	}
	return w.rate(now, m.started, rateSpan)
}

// Retried implements master.Observer.
func (m *Monitor) Retried(name string, ev master.TaskEvent, cause master.RetryCause) {
	m.mu.Lock()
	defer m.mu.Unlock()
	task := key(ev)
	holder, _ := m.trainers.release(task, ev.At)
	switch cause {
	case master.CauseFailed:
		m.counts.failures++
		if t := m.trainers.seen(name, ev.At); t != nil {
			t.failures++
		}
	case master.CauseTimedOut:
		m.counts.timeouts++
		if holder != nil {
			name = holder.name
			holder.timeouts++
			holder.timedOut = true
		}
	case master.CauseLost:
		m.counts.lost++
		if holder != nil {
			holder.lost = true
		}
	}
	if ev.Discarded {
		m.counts.discards++
	}
	if len(m.events) == MaxEvents {
		m.events = slices.Delete(m.events, 0, 1)
	}
	m.events = append(m.events, statusapi.Event{Time: ev.At.UTC(), Dataset: task.dataset, Task: ev.Index, Pass: ev.Pass, Trainer: name,
		Cause: cause.String(), Discarded: ev.Discarded, Reason: ev.Reason})
}

// Relieved implements master.Observer.
func (m *Monitor) Relieved(_ string, kind taskqueue.Stragglers) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if kind == taskqueue.StragglersSplit {
		m.counts.splits++
	} else {
		m.counts.backups++
	}
}

// GetTaskServed implements master.Observer.
func (m *Monitor) GetTaskServed(took time.Duration, err error) {
	m.metrics.byResult[getTaskResult(err)].Observe(took.Seconds())
}

// getTaskResult is the result label of a GetTask answered err: a handful
// of values, whatever the error says.
func getTaskResult(err error) string {
	switch {
	case err == nil:
		return "task"
	case wire.Is(err, wire.TextNoTask):
		return "no_task"
	case wire.Is(err, wire.TextAllDone):
		return "all_done"
	}
	return "error"
}

// Committed implements master.Observer.
func (m *Monitor) Committed(took time.Duration, entries int, err error) {
	m.metrics.commit.Observe(took.Seconds())
	m.metrics.groupSize.Observe(float64(entries))
	if errors.Is(err, master.ErrLeadershipLost) {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.counts.rejected++
	}
}

// Leading reports whether this master leads: the readiness probe's
// answer, which reads nothing else.
func (m *Monitor) Leading() bool { return m.source() != nil }

// Status returns what the status page shows, but for the masters (the
// HTTP door adds them).
func (m *Monitor) Status() statusapi.Status {
	src := m.read()
	m.mu.Lock()
	defer m.mu.Unlock()
	st, mo := m.status(src)
	c, shown := mo.table(m.trainers)
	st.Trainers, st.TrainersTotal, st.TrainersConnected, st.TrainersStalled = shown, c.tracked, c.connected, c.stalled
	return st
}

// sourced is what the monitor reads of the leading service, outside its
// lock: that takes the datasets' locks.
type sourced struct {
	jobs  []master.JobState
	cps   master.CheckpointsState
	runs  map[string]rendezvous.Run
	conns map[string]int // nil on a standby
}

// read reads the leading service; nothing on a standby.
func (m *Monitor) read() sourced {
	var s sourced
	if src := m.source(); src != nil {
		s.jobs, s.cps, s.runs, s.conns = src.Jobs(), src.Checkpoints(), src.RendezvousRuns(), src.ConnectedTrainers()
	}
	return s
}

// status returns the status of src but for the trainers, and the moment
// they are to be read at, after forgetting those silent for ForgetAfter.
// Called with m.mu held.
func (m *Monitor) status(src sourced) (statusapi.Status, moment) {
	now := m.cfg.Now()
	st := statusapi.Status{Time: now.UTC(), Leading: m.jobs != nil, Rate: m.history.series(now, m.born),
		Checkpoints: checkpointsStatus(src.cps), Rendezvous: RendezvousStatus(src.runs)}
	mo := moment{now: now, pass: -1, conns: src.conns,
		stallAfter: max(m.cfg.StallAfter, time.Duration(3*m.held.mean*float64(time.Second)))}
	for _, j := range src.jobs {
		js := m.jobStatus(j, now)
		if j.Name == wire.DefaultDataset {
			st.Job, mo.pass = js, j.Pass
		} else {
			st.Datasets = append(st.Datasets, *js)
		}
		mo.running = mo.running || !j.AllDone
	}
	m.trainers.forget(now.Add(-m.cfg.ForgetAfter))
	st.TrainersUntracked = m.trainers.left.count()
	st.Events = make([]statusapi.Event, 0, len(m.events))
	for i := len(m.events) - 1; i >= 0; i-- {
		st.Events = append(st.Events, m.events[i])
	}
	return st, mo
}

// jobStatus turns a dataset's state in the service into the page's; its
// rate and ETAs count its own finishes only. Called with m.mu held.
func (m *Monitor) jobStatus(j master.JobState, now time.Time) *statusapi.JobStatus {
	js := &statusapi.JobStatus{
		Name: j.Name, Round: j.Round, RecordsPerTask: j.RecordsPerTask,
		Dataset: j.Patterns, Files: j.Files, Chunks: j.Chunks, ChunksPerTask: j.ChunksPerTask, Tasks: j.Tasks,
		Records: j.Records, Pass: j.Pass, Passes: j.Passes, AllDone: j.AllDone, Endless: j.Endless,
		Todo: j.Todo, Pending: j.Pending, Done: j.Done, Failed: j.Failed, RecordsDone: j.RecordsDone, Pieces: j.Pieces,
		CommitWaiting: j.CommitWaiting, CommitGroups: j.CommitGroups,
		RecordsPerSecond: m.rate(j.Name, now),
		Discarded:        []statusapi.DiscardedTask{},
	}
	if js.Dataset == nil {
		js.Dataset = []string{} // an index-range dataset: [] in JSON, as a job with files
	}
	for _, r := range j.Discarded {
		js.Discarded = append(js.Discarded, statusapi.DiscardedTask{Task: r.Index, Timeouts: r.Timeouts, Reason: r.Error})
	}
	js.PassETASeconds, js.JobETASeconds = js.ETAs()
	js.Group, js.Rewound = groupStatus(j.Group), rewoundStatus(j)
	return js
}

// groupStatus turns the group training a dataset's pass into the page's;
// nil for none.
func groupStatus(g *master.GroupState) *statusapi.GroupStatus {
	if g == nil {
		return nil
	}
	gs := &statusapi.GroupStatus{Ranks: g.Group.Ranks, Batch: g.Group.Batch, Batches: g.Group.Batches(g.PassRecords), Records: g.PassRecords,
		PerRank: make([]statusapi.RankStatus, 0, len(g.PerRank)), RanksNotShown: max(0, g.Group.Ranks-len(g.PerRank))}
	for _, r := range g.PerRank {
		gs.PerRank = append(gs.PerRank, statusapi.RankStatus{Rank: r.Rank, Trainers: append([]string{}, r.Trainers...),
			Share: r.Share, Handed: r.Handed, Done: r.Done})
	}
	return gs
}

// Collector returns the Prometheus collector of the monitor's metrics.
func (m *Monitor) Collector() prometheus.Collector { return (*collector)(m) }
