package main

import (
	"encoding/json"
	"os/exec"
	"testing"

	"github.com/trainmaster/master/internal/masterbench"
)

// TestBench runs a short `master bench` end to end, with trainers in each
// encoding: an embedded etcd, two master processes, trainers and bare
// transactions, and a JSON report whose every figure was measured.
func TestBench(t *testing.T) {
	for _, codec := range []string{"gob", "json"} {
		t.Run(codec, func(t *testing.T) { checkBench(t, codec) })
	}
}

func checkBench(t *testing.T, codec string) {
	out, err := exec.Command(binPath, "bench", "-json", "-codec", codec, "-chunks", "300", "-trainers", "1,4",
		"-warmup", "200ms", "-duration", "500ms", "-dir", t.TempDir(), "-log-level", "warn").Output()
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, out)
	}
	var rep masterbench.Report
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(rep.Datasets) != 1 || rep.Codec != codec {
		t.Fatalf("%d datasets, codec %q\n%s", len(rep.Datasets), rep.Codec, out)
	}
	d := rep.Datasets[0]
	if d.Chunks != 300 || d.Tasks != 300 || d.Accept <= 0 || d.Memory.RSS <= 0 || d.Memory.Peak < d.Memory.RSS ||
		d.Failover <= 0 || d.FailoverMemory.RSS <= 0 || len(d.Runs) != 2 {
		t.Fatalf("dataset figures missing:\n%s", out)
	}
	for i, r := range d.Runs {
		if r.Trainers != []int{1, 4}[i] || r.Tasks <= 0 || r.TasksPerSec <= 0 || r.BareTxnsPerSec <= 0 || r.Ratio <= 0 ||
			r.Latency.P50 <= 0 || r.Latency.P99 < r.Latency.P50 || r.Latency.Max < r.Latency.P99 ||
			r.WALBytesPerTask <= 0 || r.PutBytesPerTask <= 0 {
			t.Errorf("run %d: figures missing: %+v", i, r)
		}
	}
}

func TestBenchRefusesBadLists(t *testing.T) {
	for _, arg := range []string{"-chunks=0", "-trainers=1,x", "-chunks=-5", "-codec=xml"} {
		out, err := exec.Command(binPath, "bench", arg).CombinedOutput()
		if err == nil {
			t.Errorf("bench %s: accepted\n%s", arg, out)
		}
	}
}
