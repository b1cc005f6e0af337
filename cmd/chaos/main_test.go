package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestChaos runs the fault-injection suite in both modes, at intensity
// 1.5 for 3 passes: independent trainers, then the ranks of a group
// restarted from their checkpoints. Every promise must hold.
func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("a run of a few minutes")
	}
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+string(filepath.Separator), "../master", "../trainer", "../etcd-embed")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// The two runs take about a minute each here; the limit is for a
	// stall, not a slow machine. The group's dataset is the smaller: a
	// group stops whole at every fault (each checkpoint is a barrier that
	// needs a master and etcd), where independent trainers train on.
	base := options{bin: bin, intensity: 1.5, files: 10, passes: 3, trainers: 8, chunkTask: 4, recordDelay: time.Millisecond,
		slow: 10, progress: time.Second, stragglers: "split", timeoutFactor: 3, limit: 8 * time.Minute,
		batch: 32, checkpointEvery: 4, checkpointWait: 15 * time.Second, checkpointsKept: 5}
	t.Run("independent", func(t *testing.T) {
		o := base
		o.independent, o.seed, o.records = true, 1, 50000
		out := runChaos(t, o)
		if !strings.Contains(out, "lost records (never trained, from the traces) 0\n") {
			t.Fatal("the table does not say no record was lost")
		}
	})
	t.Run("group", func(t *testing.T) {
		o := base
		o.seed, o.records = 7, 30000
		out := runChaos(t, o)
		for _, line := range []string{"records missing from the model           0 ", "records trained twice into the model     0 "} {
			if !strings.Contains(out, line) {
				t.Fatalf("the table lacks %q", line)
			}
		}
	})
}

// runChaos runs the suite with o in a directory of the test's, fails the
// test if a promise was broken, and returns the table.
func runChaos(t *testing.T, o options) string {
	o.dir = t.TempDir()
	start := time.Now()
	var out bytes.Buffer
	r, err := run(context.Background(), o, &out)
	if r != nil {
		r.print(&out)
	}
	t.Logf("%v\n%s", time.Since(start).Round(time.Second), out.String())
	if err != nil {
		logTails(t, o.dir)
		t.Fatal(err)
	}
	if err := r.verdict(); err != nil {
		logTails(t, o.dir)
		t.Fatal(err)
	}
	if len(r.faults) < 4 {
		t.Fatalf("only %d kinds of fault injected: %v", len(r.faults), r.faults)
	}
	return out.String()
}

// logTails prints the end of every process's log: CI keeps only the test's
// output, not its working directory.
func logTails(t *testing.T, dir string) {
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	for _, path := range logs {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
		n := 3 // trainers: their last tasks
		if strings.HasPrefix(filepath.Base(path), "master") {
			n = 15
		}
		t.Logf("%s, last %d lines:\n%s", filepath.Base(path), n, strings.Join(lines[max(len(lines)-n, 0):], "\n"))
	}
}
