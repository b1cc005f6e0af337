package master

import (
	"time"

	"github.com/trainmaster/master/internal/taskqueue"
)

// Observer is told what the service does, for its metrics and status page
// (package monitor). Every call describes a change that is already durable
// (or, for Called and GetTaskServed, a call that was made), comes outside
// the service's lock, and may come from several goroutines at once: an
// Observer must be safe for concurrent use and must not block.
//
// Trainer names are what the trainer sent, passed through wire.TrainerName.
type Observer interface {
	// Called: a trainer made a call carrying its name (GetTask,
	// TaskFinished, TaskFailed, TaskProgress), at its start, to a dataset
	// accepted: a call that reaches no dataset is not told.
	Called(trainer string, at time.Time)
	// Dispatched: the task was handed to the trainer.
	Dispatched(trainer string, t TaskEvent)
	// Finished: the trainer's finish report was recorded.
	Finished(trainer string, t TaskEvent)
	// Retried: the task went back to todo, or was discarded for its pass
	// when Discarded is set: after a failure report from trainer, or after
	// a timeout (trainer is then empty: the holder is whoever it was
	// dispatched to).
	Retried(trainer string, t TaskEvent, cause RetryCause)
	// Relieved: the trainer was given part of a straggler (a piece cut
	// off it: StragglersSplit) or a backup dispatch of it
	// (StragglersBackup).
	Relieved(trainer string, kind taskqueue.Stragglers)
	// GetTaskServed: a GetTask call was answered after took, err being its
	// answer (nil, wire.ErrNoTask, wire.ErrAllDone, ...).
	GetTaskServed(took time.Duration, err error)
	// Committed: a group of entries changes was committed to the Store, or
	// failed to be (err; errors.Is(err, ErrLeadershipLost) for a fenced
	// write the store rejected).
	Committed(took time.Duration, entries int, err error)
}

// TaskEvent describes a task an Observer is told about.
type TaskEvent struct {
	Dataset            string // the task's dataset (wire.Task.Dataset; never empty)
	Index, Pass, Epoch int
	Records            int64     // records of the task
	At                 time.Time // when it happened
	Timeouts           int       // the task's timeouts and failures in the pass (Retried)
	Discarded          bool      // Retried: discarded for its pass (-task-timeout-max)
	Reason             string    // Retried: the failure reason, cut to wire.MaxErrorBytes
}

// RetryCause says why a task was sent back.
type RetryCause int

// The causes of Observer.Retried.
const (
	CauseFailed   RetryCause = 1 // a failure report
	CauseTimedOut RetryCause = 2 // its deadline passed
	// CauseLost: its trainer was lost (presence.go); the task went back
	// to the front of Todo without counting as a timeout.
	CauseLost RetryCause = 3
)

func (c RetryCause) String() string {
	switch c {
	case CauseFailed:
		return "failed"
	case CauseLost:
		return "trainer lost"
	}
	return "timed out"
}

// noObserver is the Observer of a service configured without one.
type noObserver struct{}

func (noObserver) Called(string, time.Time)              {}
func (noObserver) Dispatched(string, TaskEvent)          {}
func (noObserver) Finished(string, TaskEvent)            {}
func (noObserver) Retried(string, TaskEvent, RetryCause) {}
func (noObserver) GetTaskServed(time.Duration, error)    {}
func (noObserver) Relieved(string, taskqueue.Stragglers) {}
func (noObserver) Committed(time.Duration, int, error)   {}

// JobState is what the status page and the metrics read of the service:
// the queues as they are in memory, which may include a change still being
// committed (Status, by contrast, waits for it).
type JobState struct {
	// Name is the dataset's name, Round its round (Service.StartRound),
	// RecordsPerTask, for an index-range dataset, the records of a task
	// (it has no files or chunks then).
	Name           string
	Round          int
	RecordsPerTask int64
	Patterns       []string
	Files          int
	Chunks         int
	ChunksPerTask  int
	Tasks          int
	Records        int64 // per pass
	Pass, Passes   int   // Pass == Passes once all are done
	AllDone        bool
	Endless        bool // passes without end: Passes is 0, AllDone never
	Todo, Pending  int
	Done, Failed   int
	RecordsDone    int64 // records of the tasks done in this pass
	// Pieces is the number of pieces cut from stragglers in this pass,
	// counted in Todo, Pending, Done and Failed beside the tasks.
	Pieces int
	// Discarded are the first MaxShownDiscarded tasks of the Failed queue
	// (discarded for this pass), in task order, with their last reason.
	Discarded []taskqueue.Record
}

// MaxShownDiscarded bounds JobState.Discarded.
const MaxShownDiscarded = 100

// Job returns the job's state, or false when the service has no dataset or
// is not serving.
func (s *datasetService) Job() (JobState, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.q == nil {
		return JobState{}, false
	}
	return JobState{
		Name: s.name, Round: s.round, RecordsPerTask: s.ds.RecordsPerTask,
		Patterns: s.ds.Patterns, Files: len(s.ds.Files), Chunks: s.ds.NumChunks(), ChunksPerTask: s.ds.ChunksPerTask,
		Tasks: s.q.NumTasks(), Records: s.ds.NumRecords(),
		Pass: s.q.Pass(), Passes: s.q.Passes(), AllDone: s.q.AllDone(), Endless: s.q.Passes() == 0,
		Todo: s.q.Count(taskqueue.Todo), Pending: s.q.Count(taskqueue.Pending),
		Done: s.q.Count(taskqueue.Done), Failed: s.q.Count(taskqueue.Failed),
		RecordsDone: s.q.DoneRecords(), Pieces: s.q.Pieces(), Discarded: s.q.FirstTasks(taskqueue.Failed, MaxShownDiscarded),
	}, true
}
