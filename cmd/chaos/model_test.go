package main

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestCandidates: the checkpoints a restart may resume from, the newest
// every rank recorded first, origin always last.
func TestCandidates(t *testing.T) {
	for _, c := range []struct {
		name    string
		inc     incarnation
		unknown bool
		want    []int64
	}{
		{"the first, no checkpoint", incarnation{}, false, []int64{1}},
		{"the first, checkpoints", incarnation{recorded: []int64{2, 3, 4}}, false, []int64{4, 3, 2, 1}},
		{"no checkpoint of its own", incarnation{resume: 4, fallback: []int64{3, 2, 1}}, false, []int64{4, 3, 2, 1}},
		{"resumed, then checkpoints", incarnation{resume: 4, fallback: []int64{3, 1}, recorded: []int64{7, 8}}, false, []int64{8, 7, 4, 3, 1}},
		{"its resume not kept", incarnation{resume: 4, fallback: []int64{3, 1}}, true, []int64{3, 1}},
		{"from origin", incarnation{resume: 1}, false, []int64{1}},
	} {
		if got := candidates(&c.inc, c.unknown, 1); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// TestModelHistory: the final model is the last incarnation's traces in
// full and, back along the resumes, each earlier one's up to the
// checkpoint the next resumed from; records trained twice or never in it
// are counted per pass, and what was cut is trained again.
func TestModelHistory(t *testing.T) {
	o := options{dir: t.TempDir(), records: 20, files: 2, passes: 1, chunkTask: 1} // 2 tasks of 10 records
	pattern, err := writeDataset(o)
	if err != nil {
		t.Fatal(err)
	}
	records := func(task, from, to int) string {
		var b strings.Builder
		for pos := from; pos < to; pos++ {
			fmt.Fprintf(&b, "0 %d %d\n", task, pos)
		}
		return b.String()
	}
	for _, c := range []struct {
		name          string
		last          [2]string // the ranks of r2, which resumed from checkpoint 5 of r0
		missing, more int64
	}{
		{"every record once", [2]string{records(0, 5, 10), records(1, 4, 10)}, 0, 0},
		{"one twice, one missing", [2]string{records(0, 4, 9), records(1, 4, 10)}, 1, 1},
	} {
		traces := map[string]string{
			// r0: checkpoint 5 recorded by both ranks, 6 by rank 1 only;
			// what followed 5 is not in the model.
			"rank-0.r0": records(0, 0, 5) + "checkpoint 5\n" + records(0, 5, 7),
			"rank-1.r0": records(1, 0, 4) + "checkpoint 5\n" + records(1, 4, 6) + "checkpoint 6\n" + "0 1 6",
			// r1 resumed from 6, which was not kept: it trained nothing.
			"rank-0.r1": "", "rank-1.r1": "",
			"rank-0.r2": c.last[0], "rank-1.r2": c.last[1],
		}
		for name, text := range traces {
			if err := os.WriteFile(o.dir+"/trace-"+name, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		g := &group{c: &cluster{o: o, rep: newReport()}, origin: 1}
		for n, resume := range []int64{0, 6, 5} {
			inc := &incarnation{n: n, resume: resume, names: []string{fmt.Sprintf("rank-0.r%d", n), fmt.Sprintf("rank-1.r%d", n)}}
			if inc.recorded, err = commonCheckpoints(g.traces(inc)); err != nil {
				t.Fatal(err)
			}
			g.incs = append(g.incs, inc)
		}
		if !slices.Equal(g.incs[0].recorded, []int64{5}) {
			t.Fatalf("r0 recorded %v in common", g.incs[0].recorded)
		}
		model, err := g.model()
		if err != nil {
			t.Fatal(err)
		}
		r := g.c.rep
		r.launched(0, 1)
		r.passes, r.gens = []int{0, 1}, []int{0, 0}
		if err := r.verify(pattern, o, model); err != nil {
			t.Fatal(err)
		}
		if r.g.missing[0] != c.missing || r.g.twice[0] != c.more || r.g.trained-r.g.inModel != 5 {
			t.Errorf("%s: missing %v, twice %v, trained again %d", c.name, r.g.missing, r.g.twice, r.g.trained-r.g.inModel)
		}
		if want := "r2 in full, r0 to checkpoint 5 (2 of 3 incarnations)"; r.g.chain != want {
			t.Errorf("%s: history %q, want %q", c.name, r.g.chain, want)
		}
		if err := r.verdict(); (err == nil) != (c.missing == 0 && c.more == 0) {
			t.Errorf("%s: verdict %v", c.name, err)
		}
	}
}
