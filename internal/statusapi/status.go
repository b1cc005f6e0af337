// Package statusapi is the status a master's side door serves as
// /status.json: its JSON types, what is derived from them for people
// (the share of a pass done, the time left), and a client that fetches it
// and finds the leading master's page. `master watch`, the status page and
// the tests read the status through it.
//
// The JSON names are a contract for scripts: fields are added, never
// renamed (testdata/status.golden.json holds every one).
package statusapi

import (
	"time"

	"github.com/trainmaster/master/go/discovery"
)

// Status is what the status page shows and /status.json serves.
type Status struct {
	Time    time.Time `json:"time"`
	Leading bool      `json:"leading"` // this master leads and serves
	// Masters are the masters of the job from the lock keys, leader first
	// (filled in by the HTTP door, which reads etcd); MastersError says why
	// they could not be read.
	Masters      []discovery.Master `json:"masters"`
	MastersError string             `json:"masters_error,omitempty"`
	// Job is the dataset train (wire.DefaultDataset): nil on a standby,
	// and before it is accepted.
	Job *JobStatus `json:"job,omitempty"`
	// Datasets are the job's other datasets (an evaluation dataset, say),
	// in name order; empty on a standby, or when train is the only one.
	Datasets []JobStatus `json:"datasets,omitempty"`
	// Checkpoints are the job's data checkpoints kept: nil on a standby,
	// and while none is kept.
	Checkpoints *CheckpointsStatus `json:"checkpoints,omitempty"`
	// Rendezvous are the runs of the job's elastic agents, by run ID.
	Rendezvous []RendezvousStatus `json:"rendezvous,omitempty"`
	// Trainers is a table of the trainers: every stalled one (up to
	// monitor.MaxShownStalled, those holding a task first), then the
	// slowest of the others (up to monitor.MaxShownTrainers), each group
	// slowest first.
	Trainers []TrainerStatus `json:"trainers"`
	// TrainersTotal counts the trainers tracked: every trainer that holds
	// a task, called within the last 10 minutes or had a task taken back
	// within them, up to the master's -max-trainers; exact.
	TrainersTotal int `json:"trainers_total"`
	// TrainersConnected counts those connected (TrainerStatus.Connected),
	// TrainersStalled those stalled.
	TrainersConnected int `json:"trainers_connected"`
	TrainersStalled   int `json:"trainers_stalled"`
	// TrainersUntracked counts the trainers that called lately but are
	// not tracked, for want of room (the master's -max-trainers): they
	// are in neither Trainers, the counts above nor the metrics. A
	// trainer holding a task is always tracked.
	TrainersUntracked int `json:"trainers_untracked"`
	// Rate is records per second in each 10-second slot of the last 30
	// minutes, oldest first (finishes this process recorded while leading,
	// of every dataset).
	Rate []RatePoint `json:"rate"`
	// Events are the latest failures, timeouts and discards, newest first.
	Events []Event `json:"events"`
}

// JobStatus is a dataset of the job as the leader sees it.
type JobStatus struct {
	Name string `json:"name"` // the dataset's name: "train", "eval", ...
	// Round is the dataset's round, from 0: how many times its passes were
	// started again (wire.Round) since its declaration. Pass and Passes
	// count on across rounds: Passes is the passes of every round started.
	Round int `json:"round,omitempty"`
	// RecordsPerTask is set for an index-range dataset, which has no files
	// and no chunks: its tasks are ranges of that many record indexes.
	RecordsPerTask int64    `json:"records_per_task,omitempty"`
	Dataset        []string `json:"dataset"` // the file patterns; empty for an index-range dataset
	Files          int      `json:"files"`
	Chunks         int      `json:"chunks"`
	ChunksPerTask  int      `json:"chunks_per_task"`
	Tasks          int      `json:"tasks"`            // per pass
	Records        int64    `json:"records_per_pass"` // per pass
	Pass           int      `json:"pass"`             // from 0; equals Passes once all are done
	Passes         int      `json:"passes"`           // 0 when Endless
	AllDone        bool     `json:"all_done"`
	// Endless: the dataset runs pass after pass until the job is stopped
	// (-passes 0, wire.Dataset.Endless); it has no job ETA, and its share
	// done is the current pass's.
	Endless     bool  `json:"endless,omitempty"`
	Todo        int   `json:"todo"`
	Pending     int   `json:"pending"`
	Done        int   `json:"done"`
	Failed      int   `json:"failed"`           // discarded for this pass
	RecordsDone int64 `json:"records_done"`     // this pass
	Pieces      int   `json:"pieces,omitempty"` // cut from stragglers in this pass, counted in the queues beside the tasks
	// CommitWaiting is the task entries changed and not yet committed to
	// etcd, CommitGroups the commits they wait for (the one in flight
	// included): a backlog behind a slow etcd.
	CommitWaiting    int     `json:"commit_waiting,omitempty"`
	CommitGroups     int     `json:"commit_groups,omitempty"`
	RecordsPerSecond float64 `json:"records_per_second"` // finishes of this dataset, over the last minute
	// PassETASeconds and JobETASeconds are the time left to the end of
	// this pass and of the last (of the current round) at the dataset's
	// current rate; nil while no rate is known, and JobETASeconds for a
	// dataset without end.
	PassETASeconds *float64 `json:"pass_eta_seconds"`
	JobETASeconds  *float64 `json:"job_eta_seconds"`
	// Discarded are the tasks discarded for this pass (at most
	// master.MaxShownDiscarded of Failed), with their last reason.
	Discarded []DiscardedTask `json:"discarded"`
	// Group is the group of ranks training this pass; nil while none
	// does (trainers outside any group, or no rank handed a task yet).
	Group *GroupStatus `json:"group,omitempty"`
	// Rewound is the dataset's last rewind to a data checkpoint; nil
	// while it was never rewound.
	Rewound *RewindStatus `json:"rewound,omitempty"`
}

// DiscardedTask is a task in the Failed queue.
type DiscardedTask struct {
	Task     int    `json:"task"`
	Timeouts int    `json:"timeouts"`
	Reason   string `json:"reason"`
}

// TrainerStatus is one trainer's figures.
type TrainerStatus struct {
	Name             string  `json:"name"`
	TasksPass        int64   `json:"tasks_pass"` // finished in the current pass of train
	RecordsPass      int64   `json:"records_pass"`
	TasksTotal       int64   `json:"tasks_total"` // finished since this master first saw it, of every dataset
	RecordsTotal     int64   `json:"records_total"`
	RecordsPerSecond float64 `json:"records_per_second"` // over the last minute, of every dataset
	// Task is the oldest task it holds now (dispatched, not yet finished),
	// nil when it holds none; Holding counts them (prefetch holds more).
	Task     *HeldTask `json:"task,omitempty"`
	Holding  int       `json:"holding"`
	Failures int64     `json:"failures"` // failure reports it sent that sent a task back
	Timeouts int64     `json:"timeouts"` // tasks it held that timed out
	LastSeen time.Time `json:"last_seen"`
	// Stalled, while the job runs: it has not called for longer than a
	// task should take, or a task it held timed out or was taken back as
	// lost since its last call.
	Stalled bool `json:"stalled"`
	// Connected: it has a connection open to the leading master (by its
	// name), whether it holds a task or not.
	Connected bool `json:"connected"`
	// Lost: its tasks went back because it had no connection to the
	// master for -trainer-grace, and it has not called since.
	Lost bool `json:"lost,omitempty"`
}

// HeldTask is a task a trainer holds.
type HeldTask struct {
	Dataset     string    `json:"dataset"` // its dataset: "train", "eval", ...
	Index       int       `json:"index"`   // its index in the dataset
	Pass        int       `json:"pass"`
	Since       time.Time `json:"since"`
	HeldSeconds float64   `json:"held_seconds"`
}

// RatePoint is the rate of one slot of time, ending at Time.
type RatePoint struct {
	Time             time.Time `json:"time"`
	RecordsPerSecond float64   `json:"records_per_second"`
}

// Event is a task sent back or discarded.
type Event struct {
	Time      time.Time `json:"time"`
	Dataset   string    `json:"dataset"` // the task's dataset: "train", "eval", ...
	Task      int       `json:"task"`
	Pass      int       `json:"pass"`
	Trainer   string    `json:"trainer"` // who reported the failure, or held the task that timed out
	Cause     string    `json:"cause"`   // "failed" or "timed out"
	Discarded bool      `json:"discarded"`
	Reason    string    `json:"reason"`
}
