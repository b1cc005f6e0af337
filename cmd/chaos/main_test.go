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

// TestChaos runs the fault-injection suite at its default intensity on a
// dataset of 100,000 records: every promise must hold.
func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("a run of a few minutes")
	}
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+string(filepath.Separator), "../master", "../trainer", "../etcd-embed")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	o := options{bin: bin, dir: t.TempDir(), seed: 1, intensity: 1.5, records: 100000, files: 10, passes: 3,
		// Runs here take about 2 minutes; the limit is for a stall, not a slow machine.
		trainers: 8, chunkTask: 4, recordDelay: time.Millisecond, slow: 10, progress: time.Second, stragglers: "split", timeoutFactor: 3, limit: 12 * time.Minute}
	var out bytes.Buffer
	r, err := run(context.Background(), o, &out)
	if r != nil {
		r.print(&out)
	}
	t.Log("\n" + out.String())
	if err != nil {
		logTails(t, o.dir)
		t.Fatal(err)
	}
	if err := r.verdict(); err != nil {
		t.Fatal(err)
	}
	if len(r.faults) < 4 {
		t.Fatalf("only %d kinds of fault injected: %v", len(r.faults), r.faults)
	}
	if !strings.Contains(out.String(), "lost records (never trained, from the traces) 0\n") {
		t.Fatal("the table does not say no record was lost")
	}
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
