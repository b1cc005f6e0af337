package master

import (
	"strconv"
	"strings"
	"time"

	"github.com/trainmaster/master/go/wire"
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
	// CheckpointStored: a data checkpoint was stored (checkpoint.go);
	// told once per checkpoint, before its callers are answered, and not
	// for a call answered the ID of one stored before (a retry).
	CheckpointStored(cp CheckpointSummary)
	// Rewound: a dataset was taken back to a data checkpoint (rewind.go);
	// told once per dataset rewound, not for a call of a restart that
	// found it done.
	Rewound(r RewindEvent)
}

// CheckpointSummary describes a stored data checkpoint, without what it
// holds.
type CheckpointSummary struct {
	ID       int64
	Name     string
	Time     time.Time // when it was stored, UTC
	Trainers int       // the trainers that took it together
	Pinned   bool      // kept beyond -checkpoints-kept
}

// summary describes cp.
func (cp DataCheckpoint) summary() CheckpointSummary {
	return CheckpointSummary{ID: cp.ID, Name: cp.Name, Time: cp.Time, Trainers: cp.Trainers, Pinned: cp.Pinned}
}

// RewindEvent describes a dataset rewound.
type RewindEvent struct {
	Dataset    string
	At         time.Time
	Checkpoint int64 // the checkpoint it went back to
	// Gen is the dataset's new generation: its number, the pass rewound
	// to, the records of that pass left to train, and the rewind's mark
	// (RewindMark).
	Gen taskqueue.Generation
}

// RewindMark reads the mark a rewind leaves in the generation it starts
// (taskqueue.Generation.Mark, "checkpoint 7, restart r2"): the
// checkpoint's ID and the restart's name; false for any other text (the
// zero generation's empty mark included).
func RewindMark(mark string) (checkpoint int64, restart string, ok bool) {
	rest, ok := strings.CutPrefix(mark, "checkpoint ")
	if !ok {
		return 0, "", false
	}
	num, restart, ok := strings.Cut(rest, ", restart ")
	id, err := strconv.ParseInt(num, 10, 64)
	if !ok || err != nil || id < 1 {
		return 0, "", false
	}
	return id, restart, true
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
func (noObserver) CheckpointStored(CheckpointSummary)    {}
func (noObserver) Rewound(RewindEvent)                   {}

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
	// Group is the group of ranks training the current pass; nil while
	// none does (trainers outside any group, or no rank handed a task
	// of the pass yet).
	Group *GroupState
	// Gen is the pass state's generation: zero until the dataset is
	// rewound to a data checkpoint; after a rewind, the pass it went back
	// to, the records of that pass left to train then, and its mark
	// (RewindMark). The store keeps it with the pass, so a new leader
	// shows the last rewind too.
	Gen taskqueue.Generation
	// CommitWaiting is the task entries of the changes made and not yet
	// committed (the commit in flight included), and CommitGroups the
	// commits they wait for: what a stalled etcd fsync leaves behind.
	CommitWaiting, CommitGroups int
}

// GroupState is the group of ranks training a dataset's current pass
// (wire's group.go).
type GroupState struct {
	Group       wire.Group
	PassRecords int64 // the records its ranks' shares divide
	// PerRank are the figures of its first MaxShownRanks ranks, in rank
	// order.
	PerRank []taskqueue.RankFigure
}

// The bounds of what JobState lists.
const (
	MaxShownDiscarded = 100 // JobState.Discarded
	MaxShownRanks     = 64  // GroupState.PerRank
)

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
		Group: s.groupState(), Gen: s.q.Gen(), CommitWaiting: s.waiting, CommitGroups: s.commitGroupsWaiting(),
	}, true
}

// commitGroupsWaiting counts the groups queued, and the one in flight.
// Called with s.mu held.
func (s *datasetService) commitGroupsWaiting() int {
	if s.inFlight {
		return len(s.groups) + 1
	}
	return len(s.groups)
}

// groupState returns the group training the current pass, nil when none
// does. Called with s.mu held.
func (s *datasetService) groupState() *GroupState {
	g, ok := s.q.Group()
	if !ok {
		return nil
	}
	ranks, _ := s.q.RankFigures(MaxShownRanks)
	return &GroupState{Group: g, PassRecords: s.q.PassRecords(), PerRank: ranks}
}

// CheckpointsState is what the status page and the metrics read of the
// job's data checkpoints: the ones kept, as the store holds them (Restore
// loads them), so that a new leader shows those its predecessor stored.
type CheckpointsState struct {
	Last   *CheckpointSummary // the newest kept; nil while none is
	Kept   []int64            // the IDs kept, oldest first
	Pinned []int64            // the IDs of Kept that are pinned
}

// Checkpoints returns the data checkpoints kept; none when the service is
// not serving.
func (s *Service) Checkpoints() CheckpointsState {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return CheckpointsState{}
	}
	s.cps.mu.Lock()
	defer s.cps.mu.Unlock()
	var st CheckpointsState
	for _, cp := range s.cps.kept {
		st.Kept = append(st.Kept, cp.ID)
		if cp.Pinned {
			st.Pinned = append(st.Pinned, cp.ID)
		}
	}
	if n := len(s.cps.kept); n > 0 {
		last := s.cps.kept[n-1].summary()
		st.Last = &last
	}
	return st
}

// rewoundEvent describes the dataset's rewind to checkpoint id, read
// once it is durable. Called with s.cps.takeMu of its service held, so
// that no other rewind came in between.
func (s *datasetService) rewoundEvent(id int64) RewindEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	ev := RewindEvent{Dataset: s.name, At: s.cfg.Clock.Now(), Checkpoint: id}
	if s.q != nil {
		ev.Gen = s.q.Gen()
	}
	return ev
}
