package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/trainmaster/master/internal/masterbench"
)

// TestBenchPaced runs `master bench -paced` end to end: 50 trainers, each
// calling every 200ms with a progress report in each task, against a
// master with its side door; then 5 of their connections close. The
// masters inherit MASTER_TRAINER_GRACE=500ms from the bench's environment
// (the bench passes no -trainer-grace), so the requeue takes about half a
// second, and the report says which grace the master used.
func TestBenchPaced(t *testing.T) {
	cmd := exec.Command(binPath, "bench", "-json", "-paced", "50", "-call-every", "200ms", "-progress", "-warmup", "100ms",
		"-duration", "1s", "-requeue-wait", "10s", "-dir", t.TempDir(), "-log-level", "warn")
	cmd.Env = append(os.Environ(), "MASTER_TRAINER_GRACE=500ms")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, out)
	}
	var rep masterbench.PacedReport
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(rep.Rows) != 1 || rep.CallEvery != 200*time.Millisecond || !rep.Progress || rep.Duration != time.Second {
		t.Fatalf("report:\n%s", out)
	}
	r := rep.Rows[0]
	// 50 trainers every 200ms: 250 calls of each kind in the window.
	if r.Trainers != 50 || r.TargetPerSec != 250 || r.Errors != 0 || r.Connect <= 0 || r.Tasks < 250 {
		t.Errorf("row: %+v", r)
	}
	for name, c := range map[string]*masterbench.Calls{"GetTask": &r.GetTask, "TaskProgress": r.TaskProgress} {
		if c == nil || c.Count < 200 || c.Count > 300 || c.PerSec < 200 || c.PerSec > 300 || c.NoTask != 0 ||
			c.Latency.P50 <= 0 || c.Latency.P99 < c.Latency.P50 || c.Latency.Max < c.Latency.P99 {
			t.Errorf("%s calls: %+v", name, c)
		}
	}
	// The window of 1s reads /metrics at its start, a second later and
	// at its end, which may be the same tick.
	if m := r.Master; m.RSS <= 0 || m.Peak < m.RSS || m.Threads <= 0 || m.FDs < 50 {
		t.Errorf("master: %+v", m)
	}
	if p := r.Metrics; p.Reads < 2 || p.Failed != 0 || p.Bytes <= 0 || p.Time.P50 <= 0 {
		t.Errorf("/metrics: %+v", p)
	}
	for name, q := range map[string]masterbench.Quantiles{"fsync": r.Fsync, "commit": r.Commit, "group": r.CommitGroup} {
		if q.Count <= 0 || q.Mean <= 0 || q.P50 == "" || q.P99 == "" {
			t.Errorf("%s histogram: %+v", name, q)
		}
	}
	q := r.Requeue
	if q.Victims != 5 || q.Held != 5 || q.Again != 5 || q.TimedOut || q.Grace != "500ms" ||
		q.First < 500*time.Millisecond || q.All < q.First || q.All > 10*time.Second {
		t.Errorf("requeue: %+v", q)
	}
}

// TestBenchPacedRefusesOtherModesFlags: the paced mode's flags and the
// other modes' do not mix, and a count is a positive whole number.
func TestBenchPacedRefusesOtherModesFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-paced", "0"}, `-paced: "0" is not a positive whole number`},
		{[]string{"-paced", "10,x"}, `-paced: "x" is not`},
		{[]string{"-paced", "10", "-door", "on", "-trainers", "4"}, "-paced runs a mode of its own, without -door, -trainers"},
		{[]string{"-paced", "10", "-call-every", "0s"}, "must be positive"},
		{[]string{"-call-every", "1s"}, "-call-every: only with -paced"},
	} {
		out, err := exec.Command(binPath, append([]string{"bench"}, tc.args...)...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), tc.want) {
			t.Errorf("bench %s: %v, want %q\n%s", strings.Join(tc.args, " "), err, tc.want, out)
		}
	}
}
