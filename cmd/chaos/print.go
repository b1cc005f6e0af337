package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

// print writes the report's table: the faults and failovers, then what
// the mode counts.
func (r *report) print(w io.Writer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(w, "\n%-40s %s\n", "fault", "injected")
	kinds := make([]string, 0, len(r.faults))
	for k := range r.faults {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	for _, k := range kinds {
		fmt.Fprintf(w, "%-40s %d\n", k, r.faults[k])
	}
	fmt.Fprintf(w, "\n%-40s %v\n", "training time", r.duration.Round(time.Millisecond))
	if len(r.failovers) > 0 {
		f := slices.Clone(r.failovers)
		slices.Sort(f)
		fmt.Fprintf(w, "%-40s %d: min %v, median %v, max %v\n", "failovers (fault to new leader serving)", len(f),
			f[0].Round(time.Millisecond), f[len(f)/2].Round(time.Millisecond), f[len(f)-1].Round(time.Millisecond))
	}
	fmt.Fprintf(w, "%-40s %d\n", "records to train (all passes)", r.records)
	if r.g.group {
		r.printGroup(w)
	} else {
		r.printIndependent(w)
	}
	fmt.Fprintf(w, "%-40s %d\n", "stale fenced writes rejected", r.rejected)
	for _, n := range r.notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
}

// printIndependent writes what the run of independent trainers counts.
func (r *report) printIndependent(w io.Writer) {
	fmt.Fprintf(w, "%-40s %d\n", "lost records (never trained, from the traces)", r.lost)
	var twice int64
	for _, n := range r.twice {
		twice += n
	}
	fmt.Fprintf(w, "%-40s %d\n", "records trained twice (from the traces)", twice)
	fmt.Fprintf(w, "%-40s %d tasks, %d records\n", "tasks consumed again after a fault", r.duplicates, r.dupRecords)
	fmt.Fprintf(w, "%-40s %d (splits logged %d, backups %d)\n", "pieces cut from stragglers", r.pieces, r.splits, r.backups)
	r.printHeld(w, true)
	fmt.Fprintf(w, "%-40s %d\n", "task consumptions with wrong records", r.wrong)
	fmt.Fprintf(w, "%-40s twice %d, never %d\n", "tasks Done in etcd per pass, not once", r.doneTwice, r.doneNever)
	fmt.Fprintf(w, "%-40s %v\n", "pass values in etcd, in order", compact(r.passes))
}

// printHeld writes the table of the tasks each fault kind affected, with
// the records trained twice filed under it if twice.
func (r *report) printHeld(w io.Writer, twice bool) {
	last := func(k string) string {
		if twice {
			return fmt.Sprint(r.twice[k])
		}
		return ""
	}
	head := "records trained twice"
	if !twice {
		head = ""
	}
	fmt.Fprintln(w, strings.TrimRight(fmt.Sprintf("\n%-40s %-10s %-28s %s", "fault", "tasks held", "back in todo: n, min/med/max", head), " "))
	for _, k := range r.kinds() {
		back := slices.Clone(r.backTodo[k])
		slices.Sort(back)
		times := "0"
		if len(back) > 0 {
			times = fmt.Sprintf("%d, %v/%v/%v", len(back), back[0].Round(10*time.Millisecond), back[len(back)/2].Round(10*time.Millisecond), back[len(back)-1].Round(10*time.Millisecond))
		}
		fmt.Fprintln(w, strings.TrimRight(fmt.Sprintf("%-40s %-10d %-28s %s", k, len(back)+r.stayed[k], times, last(k)), " "))
	}
}

// compact shows a sequence without its repeats.
func compact(xs []int) []int { return slices.Compact(slices.Clone(xs)) }

// kinds are the fault kinds with a figure in the held-tasks table.
func (r *report) kinds() []string {
	set := map[string]bool{}
	for k := range r.backTodo {
		set[k] = true
	}
	for k := range r.stayed {
		set[k] = true
	}
	for k := range r.twice {
		set[k] = true
	}
	kinds := slices.Collect(maps.Keys(set))
	slices.Sort(kinds)
	return kinds
}
