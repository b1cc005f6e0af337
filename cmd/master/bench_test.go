package main

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/trainmaster/master/internal/masterbench"
)

// TestBench runs a short `master bench` end to end, with trainers in each
// encoding, and with the side door both off and on: an embedded etcd,
// master processes, trainers and bare transactions, and a JSON report
// whose every figure was measured.
func TestBench(t *testing.T) {
	for _, codec := range []string{"gob", "json"} {
		t.Run(codec, func(t *testing.T) { checkBench(t, codec, masterbench.DoorOff) })
	}
	t.Run("door", func(t *testing.T) { checkBench(t, "gob", masterbench.DoorBoth) })
}

func checkBench(t *testing.T, codec, door string) {
	out, err := exec.Command(binPath, "bench", "-json", "-codec", codec, "-door", door, "-chunks", "300", "-trainers", "1,4",
		"-warmup", "200ms", "-duration", "500ms", "-dir", t.TempDir(), "-log-level", "warn").Output()
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, out)
	}
	var rep masterbench.Report
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(rep.Datasets) != 1 || rep.Codec != codec || rep.Door != door {
		t.Fatalf("%d datasets, codec %q, door %q\n%s", len(rep.Datasets), rep.Codec, rep.Door, out)
	}
	windows := map[string]int{masterbench.DoorOff: 1, masterbench.DoorBoth: 4}[door]
	d := rep.Datasets[0]
	if d.Chunks != 300 || d.Tasks != 300 || d.Accept <= 0 || d.Memory.RSS <= 0 || d.Memory.Peak < d.Memory.RSS ||
		d.Failover <= 0 || d.FailoverMemory.RSS <= 0 || len(d.Runs) != 2*windows || (d.DoorMemory != nil) != (door == masterbench.DoorBoth) {
		t.Fatalf("dataset figures missing:\n%s", out)
	}
	for i, r := range d.Runs {
		if r.Trainers != []int{1, 4}[i/windows] || (r.Door && door == masterbench.DoorOff) || r.Tasks <= 0 || r.TasksPerSec <= 0 ||
			r.BareTxnsPerSec <= 0 || r.Ratio <= 0 || r.Latency.P50 <= 0 || r.Latency.P99 < r.Latency.P50 ||
			r.Latency.Max < r.Latency.P99 || r.WALBytesPerTask <= 0 || r.PutBytesPerTask <= 0 {
			t.Errorf("run %d: figures missing: %+v", i, r)
		}
		switch {
		case !r.Door && (r.Scrapes != 0 || r.TrainersShown != 0):
			t.Errorf("run %d, without the door: %d pages read, %d trainers shown", i, r.Scrapes, r.TrainersShown)
		// A window of 500ms reads both pages once; the door's master
		// tracks every named trainer it has seen: bench-0 to bench-3.
		case r.Door && (r.Scrapes < 2 || r.ScrapeErrors != 0 || r.TrainersShown != r.Trainers):
			t.Errorf("run %d, with the door: %d pages read, %d failed, %d trainers shown", i, r.Scrapes, r.ScrapeErrors, r.TrainersShown)
		}
	}
	if door != masterbench.DoorBoth {
		if d.DoorCost != nil {
			t.Errorf("a door cost without the door: %+v", d.DoorCost)
		}
		return
	}
	if len(d.DoorCost) != 2 {
		t.Fatalf("door cost: %+v", d.DoorCost)
	}
	for i, c := range d.DoorCost {
		order := strings.Join(c.Order, " ")
		if c.Trainers != []int{1, 4}[i] || c.TasksPerSec <= 0 || c.Ratio <= 0 || (order != "off on on off" && order != "on off off on") {
			t.Errorf("door cost %d: %+v", i, c)
		}
		for k, state := range c.Order {
			if r := d.Runs[4*i+k]; r.Door != (state == masterbench.DoorOn) {
				t.Errorf("door cost %d says %s, window %d ran with door %v", i, order, 4*i+k, r.Door)
			}
		}
	}
}

func TestBenchRefusesBadLists(t *testing.T) {
	for _, arg := range []string{"-chunks=0", "-trainers=1,x", "-chunks=-5", "-codec=xml", "-door=sometimes"} {
		out, err := exec.Command(binPath, "bench", arg).CombinedOutput()
		if err == nil {
			t.Errorf("bench %s: accepted\n%s", arg, out)
		}
	}
}
