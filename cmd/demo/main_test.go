package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDemo builds the binaries and runs the demo as a user would, small.
func TestDemo(t *testing.T) {
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+string(filepath.Separator), "../master", "../trainer", ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(filepath.Join(bin, "demo"), "-bin", bin, "-files", "3", "-records", "600", "-chunks-per-task", "1",
		"-record-delay", "1ms", "-task-timeout-min", "1s", "-progress", "200ms").CombinedOutput()
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out)
	}
	for _, want := range []string{
		"dataset accepted", "task failed; back in todo", "task timed out; back in todo",
		"with SIGKILL in the middle of the pass", "took over", "restarted as a standby", "state restored",
		"all 3 passes done", "verification passed: every record of every pass consumed (3 passes x 1800 records",
	} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("demo output lacks %q:\n%s", want, out)
		}
	}
}
