package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/pkg/errors"

	"github.com/trainmaster/master/internal/master"
	"github.com/trainmaster/master/internal/taskqueue"
)

// What `master inspect` shows of data checkpoints (protocol.md, Data
// checkpoints): the ones kept, read from etcd (NS/checkpoints/), each
// dataset's generation and last rewind from its pass key, and with
// -checkpoint ID one checkpoint in full.

// checkpointSummary is a data checkpoint kept, as inspect lists it.
type checkpointSummary struct {
	ID       int64     `json:"id"`
	Name     string    `json:"name"`
	Time     time.Time `json:"time"`
	Trainers int       `json:"trainers"`
	Pinned   bool      `json:"pinned,omitempty"`
	// Datasets are, by name, each dataset's pass and records trained.
	Datasets map[string]pointSummary `json:"datasets"`
}

type pointSummary struct {
	Pass    int   `json:"pass"`
	Records int64 `json:"records_trained"`
}

// generationSummary is a dataset's pass state's generation, from its
// pass key: the last rewind to a data checkpoint.
type generationSummary struct {
	Gen        int    `json:"gen"`
	Pass       int    `json:"pass"`         // the pass rewound to
	Left       int64  `json:"records_left"` // its records left to train then
	Rewound    string `json:"rewound"`      // the rewind's mark: "checkpoint 7, restart r2"
	Checkpoint int64  `json:"checkpoint,omitempty"`
	Restart    string `json:"restart,omitempty"`
}

// generationOf summarises a stored generation; nil for a dataset never
// rewound.
func generationOf(g taskqueue.Generation) *generationSummary {
	if g.Gen == 0 {
		return nil
	}
	s := &generationSummary{Gen: g.Gen, Pass: g.Pass, Left: g.Left, Rewound: g.Mark}
	s.Checkpoint, s.Restart, _ = master.RewindMark(g.Mark)
	return s
}

// text says the rewind, passes from 0 as inspect counts them.
func (g *generationSummary) text() string {
	to := fmt.Sprintf("to %q", g.Rewound)
	if g.Checkpoint != 0 {
		to = fmt.Sprintf("to checkpoint %d for restart %q", g.Checkpoint, g.Restart)
	}
	return fmt.Sprintf("%s: pass %d again, %d records to train (generation %d)", to, g.Pass, g.Left, g.Gen)
}

// gen is the generation whose entries count: the pass key's.
func (in *queueInspection) gen() int {
	if in.Generation == nil {
		return 0
	}
	return in.Generation.Gen
}

// lastPassGen says whether an entry of the pass before the current one,
// of generation gen, counts: of the current generation when that one
// began before the current pass (it ran the pass before), of any when the
// pass before ran before the last rewind.
func (in *queueInspection) lastPassGen(gen int) bool {
	g := in.Generation
	return g == nil || g.Pass >= in.Pass || gen == g.Gen
}

func summariseCheckpoints(kept []master.DataCheckpoint) []checkpointSummary {
	out := make([]checkpointSummary, 0, len(kept))
	for _, cp := range kept {
		s := checkpointSummary{ID: cp.ID, Name: cp.Name, Time: cp.Time, Trainers: cp.Trainers, Pinned: cp.Pinned, Datasets: map[string]pointSummary{}}
		for name, p := range cp.Datasets {
			s.Datasets[name] = pointSummary{Pass: p.Trained.Pass, Records: p.Records}
		}
		out = append(out, s)
	}
	return out
}

// printCheckpoints lists the checkpoints kept, one a line.
func printCheckpoints(w io.Writer, cps []checkpointSummary) {
	if len(cps) == 0 {
		fmt.Fprintln(w, "checkpoints: none kept")
		return
	}
	fmt.Fprintf(w, "checkpoints: %d kept, the newest last (-checkpoint ID shows one in full)\n", len(cps))
	for _, cp := range cps {
		var sets []string
		for _, name := range slices.Sorted(maps.Keys(cp.Datasets)) {
			p := cp.Datasets[name]
			sets = append(sets, fmt.Sprintf("%s pass %d, %d records trained", name, p.Pass, p.Records))
		}
		fmt.Fprintf(w, "checkpoint: %d %q %s by %s%s: %s\n", cp.ID, cp.Name, cp.Time.Local().Format(time.RFC3339),
			plural(cp.Trainers, "trainer"), pinned(cp.Pinned), cmp.Or(strings.Join(sets, "; "), "no dataset"))
	}
}

func plural(n int, one string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %ss", n, one)
}

func pinned(p bool) string {
	if p {
		return ", pinned"
	}
	return ""
}

// checkpointInspection is one checkpoint in full, as -checkpoint ID
// -json prints it.
type checkpointInspection struct {
	ID       int64             `json:"id"`
	Name     string            `json:"name"`
	Time     time.Time         `json:"time"`
	Trainers int               `json:"trainers"`
	Pinned   bool              `json:"pinned"`
	Datasets []pointInspection `json:"datasets"` // in name order
}

// pointInspection is a dataset's part of a checkpoint.
type pointInspection struct {
	Name    string `json:"name"`
	Pass    int    `json:"pass"`
	Round   int    `json:"round"`
	Gen     int    `json:"gen"`
	Tasks   int    `json:"tasks"`
	Records int64  `json:"records_trained"`
	// Whole are the tasks wholly trained, as ranges [first, last].
	Whole [][2]int `json:"whole"`
	// Part are the tasks trained in part, ascending, with their trained
	// runs of positions [from, to) in the task's record order.
	Part []partInspection `json:"part"`
}

type partInspection struct {
	Task int      `json:"task"`
	Runs [][2]int `json:"runs"`
}

// printCheckpoint prints the kept checkpoint id in full.
func printCheckpoint(w io.Writer, kept []master.DataCheckpoint, id int64, asJSON bool) error {
	i := slices.IndexFunc(kept, func(cp master.DataCheckpoint) bool { return cp.ID == id })
	if i < 0 {
		ids := make([]string, len(kept))
		for j, cp := range kept {
			ids[j] = fmt.Sprint(cp.ID)
		}
		return errors.Errorf("checkpoint %d is not kept (kept: %s)", id, cmp.Or(strings.Join(ids, ", "), "none"))
	}
	cp := inspectCheckpoint(kept[i])
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(cp)
	}
	fmt.Fprintf(w, "checkpoint: %d %q\n", cp.ID, cp.Name)
	fmt.Fprintf(w, "time:       %s\n", cp.Time.Local().Format(time.RFC3339))
	fmt.Fprintf(w, "trainers:   %d%s\n", cp.Trainers, pinned(cp.Pinned))
	for _, p := range cp.Datasets {
		fmt.Fprintf(w, "%-11s pass %d, round %d, generation %d: %d records trained\n", p.Name+":", p.Pass, p.Round, p.Gen, p.Records)
		whole, n := "none", 0
		if len(p.Whole) > 0 {
			var parts []string
			for _, r := range p.Whole {
				parts = append(parts, rangeText(r[0], r[1], "-"))
				n += r[1] - r[0] + 1
			}
			whole = fmt.Sprintf("%s (%s)", strings.Join(parts, ", "), plural(n, "task"))
		}
		fmt.Fprintf(w, "  whole:    %s\n", whole)
		for j, part := range p.Part {
			head := "  in part:  "
			if j > 0 {
				head = "            "
			}
			var runs []string
			for _, r := range part.Runs {
				runs = append(runs, rangeText(r[0], r[1]-1, " to "))
			}
			fmt.Fprintf(w, "%stask %d: records %s\n", head, part.Task, strings.Join(runs, ", "))
		}
	}
	return nil
}

// inspectCheckpoint lays cp out for people and scripts.
func inspectCheckpoint(cp master.DataCheckpoint) checkpointInspection {
	out := checkpointInspection{ID: cp.ID, Name: cp.Name, Time: cp.Time, Trainers: cp.Trainers, Pinned: cp.Pinned, Datasets: []pointInspection{}}
	for _, name := range slices.Sorted(maps.Keys(cp.Datasets)) {
		p := cp.Datasets[name]
		pi := pointInspection{Name: name, Pass: p.Trained.Pass, Round: p.Round, Gen: p.Gen, Tasks: p.Tasks, Records: p.Records,
			Whole: taskRanges(p.Trained.Whole), Part: []partInspection{}}
		for _, task := range slices.Sorted(maps.Keys(p.Trained.Part)) {
			part := partInspection{Task: task}
			for _, r := range p.Trained.Part[task] {
				part.Runs = append(part.Runs, [2]int{r.From, r.To})
			}
			pi.Part = append(pi.Part, part)
		}
		out.Datasets = append(out.Datasets, pi)
	}
	return out
}

// taskRanges groups ascending tasks into ranges [first, last].
func taskRanges(tasks []int) [][2]int {
	out := [][2]int{}
	for _, t := range tasks {
		if n := len(out); n > 0 && out[n-1][1] == t-1 {
			out[n-1][1] = t
			continue
		}
		out = append(out, [2]int{t, t})
	}
	return out
}

// rangeText is "first<sep>last", or "first" alone when they are one.
func rangeText(first, last int, sep string) string {
	if first == last {
		return fmt.Sprint(first)
	}
	return fmt.Sprintf("%d%s%d", first, sep, last)
}
