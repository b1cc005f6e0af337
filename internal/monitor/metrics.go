package monitor

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/trainmaster/master/internal/statusapi"
)

// The metrics follow Prometheus' conventions: the trainmaster_ prefix,
// base units, _total for counters, _seconds for durations. doc/operations.md
// lists them.

// metrics are the histograms the monitor feeds as it is told; the rest is
// read from the monitor and the leading service at each scrape (collector).
type metrics struct {
	getTask   *prometheus.HistogramVec // by result
	byResult  map[string]prometheus.Observer
	commit    prometheus.Histogram
	groupSize prometheus.Histogram
}

func newMetrics() *metrics {
	m := &metrics{
		getTask: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "trainmaster_get_task_duration_seconds",
			Help:    "Time to answer a GetTask call, its commit included, by result: task, no_task (retry later), all_done, error.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14), // 0.5 ms to 4 s
		}, []string{"result"}),
		commit: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "trainmaster_commit_duration_seconds",
			Help:    "Time of one fenced commit of a group of queue changes to etcd.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}),
		groupSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "trainmaster_commit_group_entries",
			Help:    "Task entries written by one commit (changes committed together).",
			Buckets: prometheus.ExponentialBuckets(1, 2, 14), // 1 to 8,192: etcd's --max-txn-ops at most
		}),
		byResult: map[string]prometheus.Observer{},
	}
	for _, result := range getTaskResults {
		m.byResult[result] = m.getTask.WithLabelValues(result) // resolved once, not per call
	}
	return m
}

// getTaskResults are the values of the result label of GetTask latency.
var getTaskResults = []string{"task", "no_task", "all_done", "error"}

// desc makes a Desc of the Monitor's own metrics, which Describe sends.
func desc(name, help string, labels ...string) *prometheus.Desc {
	d := prometheus.NewDesc(name, help, labels, nil)
	descs = append(descs, d)
	return d
}

// descs are every Desc desc made, in the order they were declared.
var descs []*prometheus.Desc

var (
	leaderDesc      = desc("trainmaster_leader", "1 while this master leads and serves trainers, 0 while it stands by.")
	passDesc        = desc("trainmaster_pass", "The current pass, from 0; equals trainmaster_passes once all are done.")
	passesDesc      = desc("trainmaster_passes", "Passes over the dataset the job makes.")
	tasksDesc       = desc("trainmaster_tasks", "Tasks of the current pass in each queue.", "queue")
	datasetTasks    = desc("trainmaster_dataset_tasks", "Tasks per pass.")
	datasetRecords  = desc("trainmaster_dataset_records", "Records per pass.")
	passRecordsDone = desc("trainmaster_pass_records_done", "Records of the tasks done in the current pass.")
	recordsDesc     = desc("trainmaster_records_done_total", "Records of the tasks finished by trainers, while this process led.")
	dispatchesDesc  = desc("trainmaster_dispatches_total", "Tasks handed to trainers.")
	finishesDesc    = desc("trainmaster_finishes_total", "Finish reports recorded.")
	failuresDesc    = desc("trainmaster_failures_total", "Failure reports that sent a task back to todo or discarded it.")
	timeoutsDesc    = desc("trainmaster_timeouts_total", "Tasks whose timeout passed (sent back to todo or discarded).")
	lostDesc        = desc("trainmaster_trainer_lost_tasks_total", "Tasks sent back to todo at once because their trainer was lost (no connection for -trainer-grace); not counted as timeouts.")
	relievedDesc    = desc("trainmaster_stragglers_relieved_total", "Stragglers an idle trainer was given part of (-stragglers): split (the rest cut off as a piece) or backup (dispatched again).", "kind")
	piecesDesc      = desc("trainmaster_pieces", "Pieces cut from stragglers in the current pass (counted in trainmaster_tasks beside the tasks).")
	discardsDesc    = desc("trainmaster_discards_total", "Tasks discarded for their pass after too many timeouts and failures.")
	rejectedDesc    = desc("trainmaster_fenced_writes_rejected_total", "Commits etcd rejected because this master no longer held the lock.")
	checkpointsDesc = desc("trainmaster_checkpoints_total", "Data checkpoints stored (Master.Checkpoint) while this process led; a retry answered a stored one's ID is not counted.")
	rewindsDesc     = desc("trainmaster_rewinds_total", "Datasets taken back to a data checkpoint (Master.Rewind) while this process led: each dataset of a rewind counts, once per restart.")
	lastCheckpoint  = desc("trainmaster_checkpoint_last_id", "The ID of the newest data checkpoint kept; 0 while none is.")
	lastCheckpointT = desc("trainmaster_checkpoint_last_timestamp_seconds", "When the newest data checkpoint kept was stored, in Unix seconds; 0 while none is.")
	rdzvRound       = desc("trainmaster_rendezvous_round", "The round of the rendezvous run of the job's elastic agents.", "run")
	rdzvNodes       = desc("trainmaster_rendezvous_nodes", "Nodes of the rendezvous run: participants of its round, and nodes waiting for the next.", "run", "state")
	trainersDesc    = desc("trainmaster_trainers", "Named trainers with a connection open to this master, tracked or not.")
	trainersStalled = desc("trainmaster_trainers_stalled", "Trainers stalled, while the job runs: silent for longer than a task takes, or a task they held timed out or was taken back as lost since.")
	trainersTracked = desc("trainmaster_trainers_tracked", "Trainers this master keeps figures of: holding a task, or called or had a task taken back in the last 10 minutes; at most -max-trainers but for holders.")
	trainersLeft    = desc("trainmaster_trainers_untracked", "Trainers that called in the last 10 minutes but are not tracked, for want of room (-max-trainers).")
	trainersRates   = desc("trainmaster_trainers_records_per_second", "Records per second each trainer tracked and connected finished over the last minute: one observation per trainer, at the scrape.")
	trainersHeld    = desc("trainmaster_trainers_task_held_seconds", "How long each trainer holding a task has held its oldest: one observation per holder, at the scrape.")
	trainerTasks    = desc("trainmaster_trainer_tasks_total", "Tasks the trainer finished since this master first saw it.", "trainer")
	trainerRecords  = desc("trainmaster_trainer_records_total", "Records of the tasks the trainer finished since this master first saw it.", "trainer")
	trainerRate     = desc("trainmaster_trainer_records_per_second", "Records per second the trainer finished over the last minute.", "trainer")
	trainerFailures = desc("trainmaster_trainer_failures_total", "Failure reports of the trainer that sent a task back.", "trainer")
	trainerTimeouts = desc("trainmaster_trainer_timeouts_total", "Tasks the trainer held that timed out.", "trainer")
	trainerHolding  = desc("trainmaster_trainer_holding_tasks", "Tasks the trainer holds now.", "trainer")
	trainerHeld     = desc("trainmaster_trainer_task_held_seconds", "How long the trainer has held its oldest task (0: none).", "trainer")
	trainerLastSeen = desc("trainmaster_trainer_last_seen_timestamp_seconds", "When the trainer last called, in Unix seconds.", "trainer")
	trainerStalled  = desc("trainmaster_trainer_stalled", "1 while the job runs and the trainer is silent for longer than a task takes, or a task it held timed out or was taken back as lost since.", "trainer")

	// Each dataset of the job, train included (the series above without
	// a dataset label are train's).
	setPass        = desc("trainmaster_dataset_pass", "The dataset's current pass, from 0; equals trainmaster_dataset_passes once all are done.", "dataset")
	setPasses      = desc("trainmaster_dataset_passes", "Passes over the dataset in the rounds started so far.", "dataset")
	setRound       = desc("trainmaster_dataset_round", "The dataset's current round, from 0: each round runs its passes again.", "dataset")
	setTasks       = desc("trainmaster_dataset_queue_tasks", "Tasks of the dataset's current pass in each queue.", "dataset", "queue")
	setRecordsDone = desc("trainmaster_dataset_pass_records_done", "Records of the tasks done in the dataset's current pass.", "dataset")
	setCommitWait  = desc("trainmaster_dataset_commit_waiting_entries", "Task entries of the dataset changed and not yet committed to etcd (the commit in flight included).", "dataset")
	setCommitQueue = desc("trainmaster_dataset_commit_waiting_groups", "Commits the dataset's changes not yet committed wait for (the one in flight included).", "dataset")
)

// collector is the Monitor seen as a prometheus.Collector.
type collector Monitor

// Describe implements prometheus.Collector.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	m := (*Monitor)(c)
	m.metrics.getTask.Describe(ch)
	m.metrics.commit.Describe(ch)
	m.metrics.groupSize.Describe(ch)
	for _, d := range descs {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	m := (*Monitor)(c)
	m.metrics.getTask.Collect(ch)
	m.metrics.commit.Collect(ch)
	m.metrics.groupSize.Collect(ch)
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	st, cn, tc, each := m.scrape()
	leading := 0.0
	if st.Leading {
		leading = 1
	}
	gauge(leaderDesc, leading)
	if j := st.Job; j != nil {
		gauge(passDesc, float64(j.Pass))
		gauge(passesDesc, float64(j.Passes))
		gauge(tasksDesc, float64(j.Todo), "todo")
		gauge(tasksDesc, float64(j.Pending), "pending")
		gauge(tasksDesc, float64(j.Done), "done")
		gauge(tasksDesc, float64(j.Failed), "failed")
		gauge(datasetTasks, float64(j.Tasks))
		gauge(datasetRecords, float64(j.Records))
		gauge(passRecordsDone, float64(j.RecordsDone))
		gauge(piecesDesc, float64(j.Pieces))
	}
	sets := st.Datasets
	if st.Job != nil {
		sets = append([]statusapi.JobStatus{*st.Job}, sets...)
	}
	for _, j := range sets {
		gauge(setPass, float64(j.Pass), j.Name)
		gauge(setPasses, float64(j.Passes), j.Name)
		gauge(setRound, float64(j.Round), j.Name)
		gauge(setTasks, float64(j.Todo), j.Name, "todo")
		gauge(setTasks, float64(j.Pending), j.Name, "pending")
		gauge(setTasks, float64(j.Done), j.Name, "done")
		gauge(setTasks, float64(j.Failed), j.Name, "failed")
		gauge(setRecordsDone, float64(j.RecordsDone), j.Name)
		gauge(setCommitWait, float64(j.CommitWaiting), j.Name)
		gauge(setCommitQueue, float64(j.CommitGroups), j.Name)
	}
	counter(recordsDesc, float64(cn.records))
	counter(dispatchesDesc, float64(cn.dispatches))
	counter(finishesDesc, float64(cn.finishes))
	counter(failuresDesc, float64(cn.failures))
	counter(timeoutsDesc, float64(cn.timeouts))
	counter(lostDesc, float64(cn.lost))
	counter(relievedDesc, float64(cn.splits), "split")
	counter(relievedDesc, float64(cn.backups), "backup")
	counter(discardsDesc, float64(cn.discards))
	counter(rejectedDesc, float64(cn.rejected))
	collectCheckpoints(ch, st.Checkpoints, cn, len(sets) > 0)
	collectRendezvous(ch, st.Rendezvous)
	gauge(trainersDesc, float64(tc.connected))
	gauge(trainersStalled, float64(tc.stalled))
	gauge(trainersTracked, float64(tc.tracked))
	gauge(trainersLeft, float64(st.TrainersUntracked))
	ch <- tc.rates.metric(trainersRates)
	ch <- tc.held.metric(trainersHeld)
	for _, t := range each {
		collectTrainer(ch, t)
	}
}

// scrape returns what a scrape exports: the status but for the trainers,
// the counters, the census of the trainers and, while they are at most
// Config.TrainerSeries, the figures of each.
func (m *Monitor) scrape() (statusapi.Status, counts, census, []statusapi.TrainerStatus) {
	src := m.read()
	m.mu.Lock()
	defer m.mu.Unlock()
	st, mo := m.status(src)
	var each []statusapi.TrainerStatus
	var visit func(*trainer, standing, float64)
	if len(m.trainers.byName) <= m.cfg.TrainerSeries {
		each = make([]statusapi.TrainerStatus, 0, len(m.trainers.byName))
		visit = func(t *trainer, s standing, rate float64) { each = append(each, mo.status(t, s, rate)) }
	}
	c := mo.take(m.trainers, visit)
	return st, m.counts, c, each
}

// collectTrainer sends the series of the trainer t.
func collectTrainer(ch chan<- prometheus.Metric, t statusapi.TrainerStatus) {
	gauge := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, t.Name)
	}
	counter := func(d *prometheus.Desc, v int64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), t.Name)
	}
	counter(trainerTasks, t.TasksTotal)
	counter(trainerRecords, t.RecordsTotal)
	counter(trainerFailures, t.Failures)
	counter(trainerTimeouts, t.Timeouts)
	gauge(trainerRate, t.RecordsPerSecond)
	gauge(trainerHolding, float64(t.Holding))
	held := 0.0
	if t.Task != nil {
		held = t.Task.HeldSeconds
	}
	gauge(trainerHeld, held)
	gauge(trainerLastSeen, float64(t.LastSeen.UnixMilli())/1000)
	stalled := 0.0
	if t.Stalled {
		stalled = 1
	}
	gauge(trainerStalled, stalled)
}
