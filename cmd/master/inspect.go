package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"slices"
	"time"

	"github.com/namsral/flag"
	"github.com/pkg/errors"

	"github.com/trainmaster/master/go/discovery"
	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/etcdconn"
	"github.com/trainmaster/master/internal/etcdstore"
	"github.com/trainmaster/master/internal/monitor"
	"github.com/trainmaster/master/internal/statusapi"
	"github.com/trainmaster/master/internal/taskqueue"
)

// inspection is what `master inspect -json` prints.
type inspection struct {
	Namespace  string `json:"namespace"`
	MasterAddr string `json:"master_addr,omitempty"` // empty: no master is serving
	// Masters are the masters campaigning for the lock, the leader first.
	Masters []discovery.Master `json:"masters"`
	// The dataset train's queues, at the top.
	queueInspection
	// Datasets are the job's other datasets, in name order.
	Datasets []queueInspection `json:"datasets,omitempty"`
	// Checkpoints are the data checkpoints kept, oldest first.
	Checkpoints []checkpointSummary `json:"checkpoints"`
	// Rendezvous are the runs of the job's elastic agents, by run ID.
	Rendezvous []statusapi.RendezvousStatus `json:"rendezvous,omitempty"`
}

// queueInspection is the state of one dataset.
type queueInspection struct {
	Name    string          `json:"name"`
	Dataset *datasetSummary `json:"dataset,omitempty"` // nil: no dataset reported yet
	Pass    int             `json:"pass"`
	Round   int             `json:"round,omitempty"`
	// Passes are the dataset's passes up to the end of its round, when
	// known: its own passes a round, or else inspect's -passes (the
	// master's); 0: unknown. AllDone: every one is over (Pass == Passes),
	// and the queues are empty. Endless: its passes have no end (stored
	// so), and Passes is 0.
	Passes  int            `json:"passes,omitempty"`
	AllDone bool           `json:"all_done,omitempty"`
	Endless bool           `json:"endless,omitempty"`
	Counts  map[string]int `json:"counts"`           // tasks and pieces
	Pieces  int            `json:"pieces,omitempty"` // cut from stragglers, or at a group's shares, in this pass
	// Group is the group of ranks training the pass, as its entries say;
	// nil: none does.
	Group *groupSummary `json:"group,omitempty"`
	// Generation is the pass state's generation the pass key holds, with
	// the last rewind to a data checkpoint; nil: never rewound.
	Generation *generationSummary `json:"generation,omitempty"`
	Pending    []taskSummary      `json:"pending"`
	// Done lists the tasks of the pass ranks of a group finished, with
	// their rank (JSON only: the text counts them).
	Done   []taskSummary `json:"done,omitempty"`
	Failed []taskSummary `json:"failed"`
	// FailedLastPass lists the tasks discarded in the pass before, which
	// the current one gave another chance (or, after the last pass, the
	// tasks the job never trained on).
	FailedLastPass []taskSummary `json:"failed_last_pass"`
}

type datasetSummary struct {
	Patterns      []string `json:"patterns,omitempty"`
	Files         int      `json:"files,omitempty"`
	Chunks        int      `json:"chunks,omitempty"`
	Tasks         int      `json:"tasks"`
	ChunksPerTask int      `json:"chunks_per_task,omitempty"`
	Records       int64    `json:"records"`
	ShuffleSeed   uint64   `json:"shuffle_seed,omitempty"` // 0: file order
	// RecordsPerTask: an index-range dataset, without files.
	RecordsPerTask int64 `json:"records_per_task,omitempty"`
	Passes         int   `json:"passes,omitempty"` // a round's; 0: the master's -passes
}

// groupSummary is a group of ranks (wire.Group).
type groupSummary struct {
	Ranks int `json:"ranks"`
	Batch int `json:"batch"`
}

type taskSummary struct {
	Task     int        `json:"task"`
	Epoch    int        `json:"epoch"`
	Timeouts int        `json:"timeouts"`
	Deadline *time.Time `json:"deadline,omitempty"` // pending: nil for a rank's, which has none
	Trainer  string     `json:"trainer,omitempty"`  // pending: who holds it
	Error    string     `json:"error,omitempty"`
	// Rank and Ranks: pending or done, the rank of a group of Ranks ranks
	// whose share the task counts for; nil outside a group.
	Rank  *int `json:"rank,omitempty"`
	Ranks int  `json:"ranks,omitempty"`
	// Piece, Of, From and To: a piece of task Of, positions From to To-1
	// of its record order; To alone: a task cut short at To.
	Piece bool `json:"piece,omitempty"`
	Of    int  `json:"of,omitempty"`
	From  int  `json:"from,omitempty"`
	To    int  `json:"to,omitempty"`
}

// name says which task, or which piece of which task, t is.
func (t taskSummary) name() string {
	switch {
	case t.Piece:
		return fmt.Sprintf("piece %d (task %d, records %d to %d)", t.Task, t.Of, t.From, t.To-1)
	case t.To > 0:
		return fmt.Sprintf("task %d (cut short at record %d)", t.Task, t.To)
	}
	return fmt.Sprintf("task %d", t.Task)
}

// holder says who holds the pending task t: " held by rank-1 (rank 1 of
// 3),", " held by node-3-4117", or nothing for a trainer without a name.
func (t taskSummary) holder() string {
	switch {
	case t.Rank != nil && t.Trainer != "":
		return fmt.Sprintf(" held by %s (rank %d of %d),", t.Trainer, *t.Rank, t.Ranks)
	case t.Rank != nil:
		return fmt.Sprintf(" held by rank %d of %d,", *t.Rank, t.Ranks)
	case t.Trainer != "":
		return " held by " + t.Trainer
	}
	return ""
}

// deadline says when the pending task t times out.
func (t taskSummary) deadline() string {
	switch {
	case t.Deadline != nil:
		return "deadline " + t.Deadline.Local().Format(time.RFC3339)
	case t.Rank != nil:
		return "no deadline (a rank's)"
	}
	return "no deadline"
}

func runInspect(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var opts etcdconn.Options
	fs := flag.NewFlagSetWithEnvPrefix("master inspect", "MASTER", flag.ContinueOnError)
	fs.SetOutput(stderr)
	opts.Register(fs)
	namespace := fs.String("namespace", "", "`prefix` of the job's etcd keys")
	dataDir := fs.String("data-dir", "./master-data", "`directory` of an embedded etcd, whose endpoint file is used when -endpoints is not given")
	asJSON := fs.Bool("json", false, "print one JSON object")
	passes := fs.Int("passes", 0, "the master's -passes (also MASTER_PASSES), to tell whether a dataset without passes of its own has done them all; 0: unknown")
	checkpoint := fs.Int64("checkpoint", 0, "print the data checkpoint of this `ID` in full, and nothing else")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if len(opts.Endpoints) == 0 {
		var err error
		if opts.Endpoints, err = embeddedEndpoint(*dataDir); err != nil {
			return errors.Wrap(err, "no -endpoints, and no embedded etcd's endpoint file")
		}
	}
	log, err := newLogger("warn", stderr)
	if err != nil {
		return err
	}
	cli, err := opts.Connect(ctx, log)
	if err != nil {
		return err
	}
	defer cli.Close()
	in := inspection{Namespace: *namespace, queueInspection: queueInspection{Name: wire.DefaultDataset, Counts: map[string]int{}}}
	resp, err := cli.Get(ctx, discovery.AddrKey(*namespace))
	if err != nil {
		return err
	}
	if len(resp.Kvs) > 0 {
		in.MasterAddr = string(resp.Kvs[0].Value)
	}
	if in.Masters, err = discovery.Masters(ctx, cli, *namespace); err != nil {
		return err
	}
	catalog := etcdstore.NewCatalog(etcdstore.Config{Client: cli, Namespace: *namespace})
	kept, err := catalog.LoadCheckpoints(ctx)
	if err != nil {
		return err
	}
	if *checkpoint != 0 {
		return printCheckpoint(stdout, kept, *checkpoint, *asJSON)
	}
	in.Checkpoints = summariseCheckpoints(kept)
	runs, err := catalog.LoadRuns(ctx)
	if err != nil {
		return err
	}
	in.Rendezvous = monitor.RendezvousStatus(runs)
	names, err := catalog.Names(ctx)
	if err != nil {
		return err
	}
	for _, name := range names {
		q := &in.queueInspection
		if name != wire.DefaultDataset {
			in.Datasets = append(in.Datasets, queueInspection{Name: name, Counts: map[string]int{}})
			q = &in.Datasets[len(in.Datasets)-1]
		}
		if err := q.load(ctx, catalog, name, *passes); err != nil {
			return err
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(in)
	}
	in.print(stdout)
	return nil
}

// load reads the state of the dataset called name; masterPasses is the
// master's -passes, 0 if unknown.
func (q *queueInspection) load(ctx context.Context, catalog *etcdstore.Catalog, name string, masterPasses int) error {
	st, err := catalog.Store(ctx, name)
	if err != nil {
		return err
	}
	snap, err := st.Load(ctx)
	if err != nil || snap.Dataset == nil {
		return err
	}
	ds := snap.Dataset
	q.Dataset = &datasetSummary{Patterns: ds.Patterns, Files: len(ds.Files), Chunks: ds.NumChunks(),
		Tasks: ds.NumTasks(), ChunksPerTask: ds.ChunksPerTask, Records: ds.NumRecords(), ShuffleSeed: ds.ShuffleSeed,
		RecordsPerTask: ds.RecordsPerTask, Passes: ds.Passes}
	q.Round, q.Endless = snap.Round, ds.Endless
	q.Generation = generationOf(snap.Gen)
	if perRound := cmp.Or(ds.Passes, masterPasses); perRound > 0 && !ds.Endless {
		q.Passes = perRound * (snap.Round + 1)
	}
	return q.summarise(snap.Pass, ds.NumTasks(), snap.Entries)
}

// summarise counts the queues of the current pass and lists pending and
// failed tasks; a task without an entry of this pass (and of the pass
// state's generation, in.Generation) is in Todo, unless every pass is
// done (in.Passes known and reached): then there is none.
func (in *queueInspection) summarise(pass, tasks int, records iter.Seq2[taskqueue.Record, error]) error {
	in.Pass = pass
	in.AllDone = in.Passes > 0 && pass >= in.Passes
	if !in.AllDone {
		in.Counts["todo"] = tasks
	}
	for r, err := range records {
		if err != nil {
			return err
		}
		if r.Pass == pass-1 && r.Queue == taskqueue.Failed && in.lastPassGen(r.Gen) {
			in.FailedLastPass = append(in.FailedLastPass, taskSummary{Task: r.Index, Epoch: r.Epoch, Timeouts: r.Timeouts, Error: r.Error,
				Piece: r.Index >= tasks, Of: r.Of, From: r.From, To: r.To})
		}
		if r.Pass != pass || r.Gen != in.gen() {
			continue // another pass's, or another generation's: ignored as a master does
		}
		t := in.current(r, tasks)
		in.Counts[r.Queue.String()]++
		switch {
		case r.Queue == taskqueue.Pending:
			in.Pending = append(in.Pending, t)
		case r.Queue == taskqueue.Failed:
			in.Failed = append(in.Failed, t)
		case t.Rank != nil:
			in.Done = append(in.Done, t)
		}
	}
	sortTasks(in.Pending)
	sortTasks(in.Done)
	sortTasks(in.Failed)
	sortTasks(in.FailedLastPass)
	return nil
}

// current summarises r, an entry of the current pass of a dataset of
// tasks tasks, and notes its piece and its group.
func (in *queueInspection) current(r taskqueue.Record, tasks int) taskSummary {
	t := taskSummary{Task: r.Index, Epoch: r.Epoch, Timeouts: r.Timeouts, Error: r.Error, To: r.To}
	if r.Index >= tasks {
		t.Piece, t.Of, t.From = true, r.Of, r.From
		in.Pieces++
	} else {
		in.Counts["todo"]-- // it was counted untouched
	}
	if r.Queue == taskqueue.Pending {
		t.Trainer = r.Trainer
		if !r.Deadline.IsZero() {
			d := r.Deadline
			t.Deadline = &d
		}
	}
	if g := r.Group; g.Ranks > 0 {
		rank := r.Rank
		t.Rank, t.Ranks = &rank, g.Ranks
		if in.Group == nil {
			in.Group = &groupSummary{Ranks: g.Ranks, Batch: g.Batch}
		}
	}
	return t
}

func sortTasks(ts []taskSummary) {
	slices.SortFunc(ts, func(a, b taskSummary) int { return a.Task - b.Task })
}

func (in inspection) print(w io.Writer) {
	ns := in.Namespace
	if ns == "" {
		ns = "(none)"
	}
	fmt.Fprintf(w, "namespace:  %s\n", ns)
	if in.MasterAddr == "" {
		fmt.Fprintln(w, "master:     none serving")
	} else {
		fmt.Fprintf(w, "master:     %s\n", in.MasterAddr)
	}
	for _, m := range in.Masters {
		role, page := "standby", ""
		if m.Leading {
			role = "leads"
		}
		if m.HTTP != "" {
			page = ", status page on " + m.HTTP
		}
		fmt.Fprintf(w, "candidate:  %s pid %d (%s%s)\n", m.Host, m.PID, role, page)
	}
	in.queueInspection.print(w)
	for _, q := range in.Datasets {
		fmt.Fprintf(w, "\n%s\n", q.Name)
		q.print(w)
	}
	fmt.Fprintln(w)
	printCheckpoints(w, in.Checkpoints)
	for _, r := range in.Rendezvous {
		fmt.Fprintf(w, "rendezvous: %s\n", r.Text())
	}
}

func (in queueInspection) print(w io.Writer) {
	if in.Dataset == nil {
		fmt.Fprintln(w, "dataset:    not reported yet")
		return
	}
	d := in.Dataset
	order := ""
	if d.ShuffleSeed != 0 {
		order = fmt.Sprintf(", shuffle seed %d", d.ShuffleSeed)
	}
	switch {
	case in.Endless:
		order += ", passes without end"
	case d.Passes != 0:
		order += fmt.Sprintf(", %s a round", statusapi.PassCount(d.Passes))
	}
	if d.RecordsPerTask != 0 {
		fmt.Fprintf(w, "dataset:    %q: index range of %d records, %d tasks of %d records%s\n", in.Name, d.Records, d.Tasks, d.RecordsPerTask, order)
	} else {
		fmt.Fprintf(w, "dataset:    %q: %q: %d files, %d chunks, %d records, %d tasks of %d chunks%s\n",
			in.Name, d.Patterns, d.Files, d.Chunks, d.Records, d.Tasks, d.ChunksPerTask, order)
	}
	if in.Round != 0 {
		fmt.Fprintf(w, "round:      %d\n", in.Round)
	}
	if in.AllDone {
		fmt.Fprintf(w, "pass:       all %s done\n", statusapi.PassCount(in.Passes))
	} else {
		end := ""
		if in.Endless {
			end = ", no end"
		}
		fmt.Fprintf(w, "pass:       %d%s\n", in.Pass, end)
		pieces := ""
		if in.Pieces > 0 {
			cut := "from stragglers"
			if in.Group != nil {
				cut = "at the ranks' shares"
			}
			if g := in.Generation; g != nil && g.Pass == in.Pass {
				cut = "at the rewind or " + cut
			}
			pieces = fmt.Sprintf(" (%d tasks and %d pieces cut %s)", d.Tasks, in.Pieces, cut)
		}
		fmt.Fprintf(w, "queues:     todo %d, pending %d, done %d, failed %d%s\n",
			in.Counts["todo"], in.Counts["pending"], in.Counts["done"], in.Counts["failed"], pieces)
	}
	if g := in.Group; g != nil {
		fmt.Fprintf(w, "group:      %d ranks, batch %d\n", g.Ranks, g.Batch)
	}
	if g := in.Generation; g != nil {
		fmt.Fprintf(w, "rewound:    %s\n", g.text())
	}
	for _, t := range in.Pending {
		fmt.Fprintf(w, "pending:    %s epoch %d%s %s (timeouts %d)\n", t.name(), t.Epoch, t.holder(), t.deadline(), t.Timeouts)
	}
	for _, t := range in.Failed {
		fmt.Fprintf(w, "failed:     %s after %d timeouts or failures: %s\n", t.name(), t.Timeouts, t.Error)
	}
	for _, t := range in.FailedLastPass {
		fmt.Fprintf(w, "failed in pass %d: %s after %d timeouts or failures: %s\n", in.Pass-1, t.name(), t.Timeouts, t.Error)
	}
}
