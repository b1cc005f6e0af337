// Package wire is the contract between the master and its trainers: the
// types that travel over net/rpc (gob or JSON-RPC, over TCP or TLS) and the
// error texts clients act on. Trainers in other programs depend on it, so it
// only grows: fields are added, never renamed or removed (gob and JSON
// ignore fields one side does not know).
//
// The master registers one service, named "Master", and serves it with
// net/rpc's gob encoding on every accepted TCP connection (inside TLS when
// the master has a certificate); clients use rpc.Dial("tcp", addr), or
// rpc.NewClient on a tls.Dial connection. A connection whose first byte is
// '{' is served in JSON-RPC 1.0 instead (net/rpc/jsonrpc; the shapes are in
// doc/protocol.md), for trainers in other languages. Its methods:
//
//	Master.ReportDataset(paths []string, reply *int) error
//	Master.GetTask(finished Task, reply *Task) error
//	Master.TaskFinished(task Task, reply *int) error
//	Master.TaskFailed(task Task, reply *int) error
//	Master.Status(unused int, reply *Status) error
//	Master.Authenticate(token string, reply *int) error
//	Master.TaskProgress(p Progress, reply *ProgressReply) error
//	Master.DeclareDataset(d Dataset, reply *int) error
//	Master.StartRound(r Round, reply *int) error
//	Master.DatasetStatus(name string, reply *Status) error
//	Master.Checkpoint(c Checkpoint, reply *CheckpointReply) error
//	Master.Rewind(r Rewind, reply *RewindReply) error
//
// A job may hold several named datasets (datasets.go); calls that name none
// are about DefaultDataset, the one ReportDataset reports.
//
// Authenticate presents the master's shared token (its -token-file). A
// master started with a token refuses every other call on a connection until
// Authenticate has succeeded on it, and refuses a wrong token: the call
// answers an error carrying TextUnauthorized and the master then closes the
// connection. A client sends the token once per connection, before its first
// call, and waits for the answer. Calling Authenticate on a master without a
// token succeeds and changes nothing.
//
// GetTask's finished argument is the task the trainer just completed, or the
// zero Task (Epoch 0) when it has none: one round trip reports a finish and
// fetches the next task. Every Task a trainer sends carries its name in
// Trainer (optional), so that the master can show per-trainer figures. TaskFinished and TaskFailed set *reply to one of the
// Report values.
package wire

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/pkg/errors"
)

// ServiceName is the name the master registers its RPC service under.
const ServiceName = "Master"

// Block names one RecordIO chunk: a trainer reads it with one seek to Offset
// and no index scan of its own.
type Block struct {
	Path       string // RecordIO file
	Idx        int    // index of the chunk within the file, from 0
	Offset     int64  // byte offset of the chunk header
	NumRecords int
}

// Task is a group of consecutive chunks handed to one trainer.
type Task struct {
	Index int // task identity, stable across passes
	Epoch int // dispatch generation of this task within its pass, from 1; 0 means "no task"
	Pass  int // pass of this dispatch, from 0
	// Blocks are the chunks to read. The master sends them; in a task a
	// trainer sends back it reads only Index, Epoch, Pass and Error, and
	// skips Blocks unread.
	Blocks []Block
	// Error says why the task failed; trainers set it with TaskFailed. The
	// master keeps and logs at most MaxErrorBytes of it.
	Error string
	// Trainer names the trainer making the call (GetTask, TaskFinished,
	// TaskFailed), for the master's per-trainer figures: its metrics, its
	// status page and its log. Optional: a trainer that sends none shows
	// as Unnamed. The master keeps at most MaxTrainerNameBytes of it, with
	// control characters replaced (TrainerName).
	Trainer string `json:",omitempty"`
	// Seed is, in a task the master hands out, the seed of its records'
	// order: 0 means train the task's records in file order; otherwise the
	// trainer trains them in the order Shuffle(records, Seed) (shuffle.go).
	// The master sets it only when the job has a -shuffle-seed.
	Seed uint64 `json:",omitempty"`
	// From is, in a task the master hands out, the position in the task's
	// record order (progress.go) to start at: an earlier dispatch trained
	// the records before it and reported so with TaskProgress. 0: all.
	From int `json:",omitempty"`
	// To is, in a task the master hands out, where to stop: the position
	// in the task's record order past its last record to train. 0: the
	// task's end. It is set on a piece, and on a task handed out again
	// after the master cut its rest off as a piece; a dispatch running
	// when its task is cut learns it from wire.ProgressReply.
	To int `json:",omitempty"`
	// Piece says that the task is a piece of task Of: the master cut the
	// records From to To-1 of Of's record order off a dispatch of Of that
	// ran far past its expected time, and hands them to another trainer
	// (the master's -stragglers). Blocks and Seed are Of's; Index is the
	// piece's own, for the reports about it, valid in its pass only.
	Piece bool `json:",omitempty"`
	Of    int  `json:",omitempty"`
	// Dataset names the dataset the task is of (datasets.go): a trainer
	// sets it in GetTask's finished argument, even the zero Task, to ask
	// for a task of that dataset, and in its reports. Empty:
	// DefaultDataset.
	Dataset string `json:",omitempty"`
	// Start and End are, in a task of an index-range dataset, the range of
	// record indexes [Start, End) it covers; Blocks is then empty. Its
	// positions (From, To, Progress.Done) count from Start, in the order
	// Shuffle gives the indexes with a Seed.
	Start int64 `json:",omitempty"`
	End   int64 `json:",omitempty"`
	// OnePass is set by a trainer in GetTask's argument to ask for a task
	// of pass Pass only (a per-pass loop: one iteration, one pass): once
	// the master's current pass is another one, it hands out nothing and
	// answers TextPassOver (TextAllDone once every pass is over). Pass is
	// then the pass the trainer trains, with a finish carried or not. A
	// GetTask without it is handed a task of whatever pass is current.
	OnePass bool `json:",omitempty"`
	// ProgressMillis is, in a task the master hands out, how often (in
	// milliseconds, from when the trainer starts on it) its holder is to
	// report progress in it (progress.go): a fifth of its expected time,
	// between MinProgressInterval and DefaultProgressInterval, so that a
	// straggler has reported by the time an idle trainer could take its
	// rest. 0 (what the master sends for DefaultProgressInterval, and a
	// master that predates the field): DefaultProgressInterval. A client
	// configured with an interval of its own keeps it.
	ProgressMillis int64 `json:",omitempty"`
	// Rank, Ranks and Batch are set by a rank of a group in GetTask's
	// argument (group.go): it is rank Rank (from 0) of a group of Ranks
	// ranks, each forming batches of Batch records. Ranks 0: a trainer
	// outside any group. The master echoes them in the task it hands out.
	Rank  int `json:",omitempty"`
	Ranks int `json:",omitempty"`
	Batch int `json:",omitempty"`
	// RankRecords, RankBatches and RankLeft are, in a task the master
	// hands a rank, the rank's plan of the pass (group.go): its share of
	// the pass's records, the batches every rank forms, and the records
	// of its share still to be handed to it after this task.
	RankRecords int64 `json:",omitempty"`
	RankBatches int   `json:",omitempty"`
	RankLeft    int64 `json:",omitempty"`
	// Gen is, in a task the master hands out, the generation of its
	// dataset's pass state: 0 until the first Rewind (checkpoint.go),
	// then at each a number the dataset never had (it grows). A trainer
	// sends it back in its reports of the task (with Index, Epoch and
	// Pass); a report of another generation is answered StalePass.
	Gen int `json:",omitempty"`
	// Ask is set by a trainer in GetTask's argument: a number it gives
	// each of its GetTasks, and sends again when it retries one whose
	// answer it did not get. The master hands a retried GetTask (the same
	// trainer, finish and Ask) the dispatch that answered it, if still
	// pending: a task whose answer was lost is not left pending with a
	// trainer that never got it. 0: none (a retry is then told by the
	// finish it carries alone).
	Ask int64 `json:",omitempty"`
}

// Root returns the task whose records t covers: Of for a piece, else
// Index.
func (t Task) Root() int {
	if t.Piece {
		return t.Of
	}
	return t.Index
}

// Unnamed is the name the master shows for a trainer that sends none.
const Unnamed = "unnamed"

// MaxTrainerNameBytes is how much of a trainer's name the master keeps.
const MaxTrainerNameBytes = 128

// TrainerName returns the name the master keeps for a trainer that sent
// name: Unnamed for an empty one, else the name cut to MaxTrainerNameBytes
// at a UTF-8 boundary, with invalid UTF-8 and control characters replaced
// by '?', so that it is safe in a log line, a metric label and a page.
func TrainerName(name string) string {
	if name == "" {
		return Unnamed
	}
	if len(name) > MaxTrainerNameBytes {
		cut := MaxTrainerNameBytes
		for cut > 0 && !utf8.RuneStart(name[cut]) {
			cut--
		}
		name = name[:cut]
	}
	clean := true
	for _, r := range name {
		if r == utf8.RuneError || unicode.IsControl(r) {
			clean = false
			break
		}
	}
	if clean {
		return name
	}
	return strings.Map(func(r rune) rune {
		if r == utf8.RuneError || unicode.IsControl(r) {
			return '?'
		}
		return r
	}, name)
}

// MaxErrorBytes is how much of a failure reason (Task.Error) the master
// keeps: a longer one is cut to its first MaxErrorBytes bytes, with its
// length noted. The reason is stored in etcd with the task, so its size is
// bounded whatever a trainer sends.
const MaxErrorBytes = 1024

// CutReason returns a failure reason bounded to MaxErrorBytes: a longer one
// keeps its first bytes, cut at a UTF-8 boundary, followed by its length.
// The master applies it to every reason it receives; a client applies it
// before sending, so that a long reason (a stack trace, say) stays far
// under the master's request size limit.
func CutReason(s string) string {
	if len(s) <= MaxErrorBytes {
		return s
	}
	cut := MaxErrorBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s... (%d bytes, cut to %d)", s[:cut], len(s), MaxErrorBytes)
}

// Status is the master's progress, as Master.Status returns it.
type Status struct {
	// Dataset is the dataset described (DatasetStatus; Status describes
	// DefaultDataset), Round its current round, and Datasets the names of
	// every dataset of the job, sorted.
	Dataset         string   `json:",omitempty"`
	Round           int      `json:",omitempty"`
	Datasets        []string `json:",omitempty"`
	DatasetReported bool
	Pass, Passes    int  // the current pass, from 0; Pass == Passes once all are done; Passes 0: no end
	AllDone         bool // every pass is over: the queues below are all 0, RecordsDone too
	Tasks           int  // tasks per pass
	Todo, Pending   int  // tasks in each queue in the current pass
	Done, Failed    int
	Records         int64 // records per pass
	RecordsDone     int64 // records of the tasks Done in the current pass
}

// Report is what the master did with a finish or failure report.
type Report int

const (
	// Recorded: the report changed the task's state.
	Recorded Report = 1
	// AlreadyDone: the task was already done in this pass; nothing changed.
	AlreadyDone Report = 2
	// StalePass: the report belongs to a pass that is over; nothing changed.
	StalePass Report = 3
	// Superseded: a failure or progress report from a dispatch that is no
	// longer the task's current one (it timed out, was re-dispatched or is
	// finished), or a progress report from a trainer other than the one
	// the current dispatch was handed to.
	Superseded Report = 4
	// TooSoon: a progress report less than MinProgressInterval after the
	// last one recorded for the same dispatch; nothing changed.
	TooSoon Report = 5
)

func (r Report) String() string {
	switch r {
	case Recorded:
		return "recorded"
	case AlreadyDone:
		return "already done"
	case StalePass:
		return "stale pass"
	case Superseded:
		return "superseded"
	case TooSoon:
		return "too soon"
	}
	return "unknown report"
}

// The error texts of the contract. Errors cross net/rpc as strings, so the
// texts are the contract: a client tests for them with Is, which looks for
// the text inside the message (the master adds why after it). The Err
// values below carry exactly these texts, for servers to wrap.
const (
	// TextNoTask: no task can be handed out now but the pass is not over
	// (tasks are pending elsewhere and may come back): retry later.
	TextNoTask = "no task available"
	// TextAllDone: every pass is over; training is finished.
	TextAllDone = "all passes done"
	// TextNoDataset: GetTask or a report came before any ReportDataset.
	TextNoDataset = "dataset not reported"
	// TextNotServing: this master cannot serve the call now: it is not (or
	// no longer) the leader, it is stopping, or it could not commit the
	// change to etcd (nothing changed then). The client should find the
	// current master and call again, with backoff.
	TextNotServing = "master is not serving"
	// TextUnauthorized: the master requires a token and this connection has
	// not presented the right one with Authenticate (or presented a wrong
	// one), or, over a connection with a client certificate, the call named
	// a trainer the certificate does not bind (doc/protocol.md). The master
	// closes the connection after answering. Retrying with the same token
	// or certificate cannot succeed: a client should give up and say so.
	TextUnauthorized = "not authenticated"
	// TextPassOver: a GetTask asking for a task of one pass (Task.OnePass)
	// while the master is at another: the pass the trainer trains is over
	// (the next one runs). Its per-pass loop ends; the next one trains the
	// pass current then.
	TextPassOver = "pass over"
)

// The contract's errors, one per text. A master wraps them with its reason
// (WithKind(ErrNotServing, cause)); the text is what crosses
// the wire.
var (
	ErrNoTask       = errors.New(TextNoTask)
	ErrAllDone      = errors.New(TextAllDone)
	ErrNoDataset    = errors.New(TextNoDataset)
	ErrNotServing   = errors.New(TextNotServing)
	ErrUnauthorized = errors.New(TextUnauthorized)
	ErrPassOver     = errors.New(TextPassOver)
)

// Is reports whether err carries the contract text.
func Is(err error, text string) bool {
	return err != nil && strings.Contains(err.Error(), text)
}
