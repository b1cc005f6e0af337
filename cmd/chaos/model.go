package main

import (
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/pkg/errors"

	"github.com/trainmaster/master/internal/dataset"
)

// Group mode's accounting: what the final model was trained on. A
// group's restart from a checkpoint throws away what its ranks trained
// after it, and the master hands those records out again: counting what
// the trainers read proves nothing then (every record is read, many
// twice). What must hold is that the model that finishes holds every
// record of every pass exactly once. Its history is rebuilt from the
// ranks' traces (group.model): the last incarnation's in full, and back
// along the chain of resumes each incarnation's cut at the checkpoint
// the next one resumed from.

// groupFacts is what the report keeps of a run in group mode.
type groupFacts struct {
	group       bool
	restarts    map[string]int // group restarts, by cause
	resumed     int            // incarnations started with -resume
	fromOrigin  int            // of them, from the checkpoint taken before the first
	fresh       int            // incarnations started without (the first)
	stored      map[int64]bool // checkpoints stored, from the masters' logs and the traces
	incomplete  int            // gatherings refused incomplete, from the masters' logs (deposed masters' too)
	rewinds     map[string]int // rewinds logged by the masters, by restart
	chain       string         // the model's history, described
	missing     []int64        // records of each pass the model does not hold
	twice       []int64        // records of each pass the model holds more than once (each extra time)
	outside     int64          // records of the model that are no record of the dataset
	inModel     int64          // records the model holds
	trained     int64          // records every trace holds, incarnations off the chain included
	passesMoved int            // times the pass key went back, each with a new generation
	passBadBack bool           // the pass went back without a new generation, or did not end at the end
}

func newGroupFacts() groupFacts {
	return groupFacts{restarts: map[string]int{}, stored: map[int64]bool{}, rewinds: map[string]int{}}
}

// launched notes an incarnation of the group started, resuming from a
// checkpoint (resume > 0: origin, the one taken before the first, or
// another) or not.
func (r *report) launched(resume, origin int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.g.group = true
	switch {
	case resume == 0:
		r.g.fresh++
	case resume == origin:
		r.g.fromOrigin++
		fallthrough
	default:
		r.g.resumed++
	}
}

// groupRestart notes a restart of the group, and its cause.
func (r *report) groupRestart(cause string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.g.restarts[cause]++
}

// chainOf notes the model's history, of incarnations in all.
func (r *report) chainOf(segs []segment, incarnations int) {
	parts := make([]string, len(segs))
	for i, s := range segs {
		parts[i] = fmt.Sprintf("r%d in full", s.incarnation)
		if s.until > 0 {
			parts[i] = fmt.Sprintf("r%d to checkpoint %d", s.incarnation, s.until)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.g.chain = fmt.Sprintf("%s (%d of %d incarnations)", strings.Join(parts, ", "), len(segs), incarnations)
}

var (
	storedRE  = regexp.MustCompile(`msg="checkpoint (\d+) \S+ stored: `)
	rewoundRE = regexp.MustCompile(`msg="rewound to checkpoint \d+, restart (\S+):`)
)

// checkpointLine counts a master's log line of a checkpoint stored or
// refused incomplete, or of a rewind.
func (r *report) checkpointLine(line string) {
	stored, rewound := storedRE.FindStringSubmatch(line), rewoundRE.FindStringSubmatch(line)
	incomplete := strings.Contains(line, "reported within") && strings.Contains(line, "nothing was stored")
	if stored == nil && rewound == nil && !incomplete {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case stored != nil:
		id, _ := strconv.ParseInt(stored[1], 10, 64)
		r.g.stored[id] = true
	case rewound != nil:
		r.g.rewinds[rewound[1]]++
	default:
		r.g.incomplete++
	}
}

// verifyGroup rebuilds the final model's history from model's segments
// and counts, per pass, the records it misses and those it holds twice;
// the consumptions' digests are checked as in the independent run.
// Called with r.mu held.
func (r *report) verifyGroup(ds *dataset.Dataset, o options, model []segment) error {
	held := counts{}
	for _, seg := range model {
		for _, path := range seg.traces {
			found, err := scanTrace(path, seg.until, held.add, nil)
			if err != nil {
				return err
			}
			if seg.until > 0 && !found {
				return errors.Errorf("%s has no line of checkpoint %d, which the next incarnation resumed from", path, seg.until)
			}
		}
	}
	all, err := filepath.Glob(filepath.Join(o.dir, "trace-*"))
	if err != nil {
		return err
	}
	for _, path := range all {
		if _, err := scanTrace(path, 0, func(int, int, int) { r.g.trained++ }, func(id int64) { r.g.stored[id] = true }); err != nil {
			return err
		}
	}
	r.g.missing, r.g.twice = make([]int64, o.passes), make([]int64, o.passes)
	for k, n := range held {
		for _, times := range n {
			r.g.inModel += int64(times)
		}
		if k[0] < 0 || k[0] >= o.passes || k[1] < 0 || k[1] >= ds.NumTasks() {
			r.g.outside += int64(len(n))
		}
	}
	for task := range ds.NumTasks() {
		suffixes, err := taskDigests(ds, task)
		if err != nil {
			return err
		}
		for pass := range o.passes {
			n := held[[2]int{pass, task}]
			for pos, times := range n {
				if pos >= len(suffixes)-1 {
					r.g.outside += int64(times)
				}
			}
			for pos := range len(suffixes) - 1 {
				switch times := at(n, pos); {
				case times == 0:
					r.g.missing[pass]++
				case times > 1:
					r.g.twice[pass] += int64(times - 1)
				}
			}
			r.checkConsumed(r.consumed[[2]int{pass, task}], suffixes)
		}
	}
	r.checkPassKey(o.passes)
	return nil
}

// checkPassKey checks the values of the pass key in etcd: it goes back
// only with a new generation (a rewind), and ends at the end. Called with
// r.mu held.
func (r *report) checkPassKey(passes int) {
	for i := 1; i < len(r.passes); i++ {
		if r.passes[i] < r.passes[i-1] {
			if r.gens[i] <= r.gens[i-1] {
				r.g.passBadBack = true
			}
			r.g.passesMoved++
		}
	}
	if len(r.passes) == 0 || r.passes[len(r.passes)-1] != passes {
		r.g.passBadBack = true
	}
}

// verdict fails a run in group mode whose final model does not hold
// every record of every pass exactly once, or whose consumptions had the
// wrong records (wrong), or whose pass went back without a rewind.
func (f *groupFacts) verdict(wrong int) error {
	var broken []string
	if n := sum(f.missing); n > 0 {
		broken = append(broken, fmt.Sprintf("%d records missing from the model (by pass: %v)", n, f.missing))
	}
	if n := sum(f.twice); n > 0 {
		broken = append(broken, fmt.Sprintf("%d records trained twice into the model (by pass: %v)", n, f.twice))
	}
	if f.outside > 0 {
		broken = append(broken, fmt.Sprintf("%d records of the model are not the dataset's", f.outside))
	}
	if wrong > 0 {
		broken = append(broken, fmt.Sprintf("%d task consumptions with the wrong records", wrong))
	}
	if f.passBadBack {
		broken = append(broken, "the pass went back without a rewind, or did not reach the end")
	}
	if len(broken) > 0 {
		return errors.Errorf("promises broken: %s", strings.Join(broken, "; "))
	}
	return nil
}

func sum(xs []int64) int64 {
	var n int64
	for _, x := range xs {
		n += x
	}
	return n
}

// printGroup writes what the run of a group counts. Called with r.mu
// held.
func (r *report) printGroup(w io.Writer) {
	f := &r.g
	restarts, causes := 0, []string{}
	for _, cause := range slices.Sorted(maps.Keys(f.restarts)) {
		restarts += f.restarts[cause]
		causes = append(causes, fmt.Sprintf("%s %d", cause, f.restarts[cause]))
	}
	fmt.Fprintf(w, "%-40s %d (%s)\n", "group restarts", restarts, strings.Join(causes, ", "))
	fmt.Fprintf(w, "%-40s %d: %d resumed from a checkpoint (%d from the start checkpoint), %d not\n", "incarnations of the group", f.resumed+f.fresh, f.resumed, f.fromOrigin, f.fresh)
	fmt.Fprintf(w, "%-40s %d (gatherings refused incomplete %d)\n", "checkpoints stored", len(f.stored), f.incomplete)
	rewinds := 0
	for _, n := range f.rewinds {
		rewinds += n
	}
	fmt.Fprintf(w, "%-40s %d (restarts rewound %d)\n", "rewinds (masters' logs)", rewinds, len(f.rewinds))
	fmt.Fprintf(w, "%-40s %s\n", "the final model's history", f.chain)
	fmt.Fprintf(w, "%-40s %d\n", "records in the final model", f.inModel)
	fmt.Fprintf(w, "%-40s %d (by pass: %v)\n", "records missing from the model", sum(f.missing), f.missing)
	fmt.Fprintf(w, "%-40s %d (by pass: %v)\n", "records trained twice into the model", sum(f.twice), f.twice)
	fmt.Fprintf(w, "%-40s %d\n", "records of the model not the dataset's", f.outside)
	fmt.Fprintf(w, "%-40s %d (of %d trained in all)\n", "records trained again after rewinds", f.trained-f.inModel, f.trained)
	r.printHeld(w, false)
	fmt.Fprintf(w, "%-40s %d\n", "task consumptions with wrong records", r.wrong)
	pass := fmt.Sprintf("back %d times, each with a rewind", f.passesMoved)
	if f.passBadBack {
		pass = "BROKEN: back without a rewind, or short of the end"
	}
	fmt.Fprintf(w, "%-40s %v (%s)\n", "pass values in etcd, in order", compact(r.passes), pass)
}
