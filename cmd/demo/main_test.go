package main

import (
	"context"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trainmaster/master/internal/etcdembed"
	"github.com/trainmaster/master/internal/proc"
)

// TestDemo builds the binaries and runs the demo as a user would, small.
func TestDemo(t *testing.T) {
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+string(filepath.Separator), "../master", "../trainer", ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(filepath.Join(bin, "demo"), "-bin", bin, "-files", "3", "-records", "900", "-chunks-per-task", "1",
		"-record-delay", "1ms", "-task-timeout-min", "1s", "-progress", "200ms", "-python-dir", "../../python").CombinedOutput()
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out)
	}
	for _, want := range []string{
		"a Python trainer started too", "dataset accepted", "task failed; back in todo", "task timed out; back in todo",
		"status page of the job: http://127.0.0.1:", "; the status page is now http://127.0.0.1:",
		"with SIGKILL in the middle of the pass", "took over", "restarted as a standby", "state restored",
		"all 3 passes done", "verification passed: every record of every pass consumed (3 passes x 2700 records",
	} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("demo output lacks %q:\n%s", want, out)
		}
	}
}

// TestStopWhileAStandbyTakesOver stops a leader and a standby together, as
// the demo does at its end: the standby may win the lock and log so while
// the other is being stopped, and stopping must still end. Map order
// decides which is stopped first, so it runs a few times.
func TestStopWhileAStandbyTakesOver(t *testing.T) {
	bin := t.TempDir()
	if out, err := exec.Command("go", "build", "-o", bin+string(filepath.Separator), "../master").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	etcd, err := etcdembed.Start(context.Background(), etcdembed.Config{Dir: t.TempDir(), UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer etcd.Close()
	for round := range 4 {
		c := &cluster{o: options{bin: bin, passes: 1, chunkTask: 1, timeoutMin: time.Second}, dir: t.TempDir(),
			endpoints: etcd.Endpoints()[0], out: io.Discard, masters: map[string]*proc.Proc{}, pages: map[string]string{},
			serving: make(chan string, 8)}
		for _, name := range []string{"A", "B"} {
			if err := c.start(name); err != nil {
				t.Fatal(err)
			}
		}
		select {
		case <-c.serving:
		case <-time.After(30 * time.Second):
			t.Fatal("no master serving")
		}
		stopped := make(chan struct{})
		go func() {
			c.stop()
			close(stopped)
		}()
		select {
		case <-stopped:
		case <-time.After(30 * time.Second):
			t.Fatalf("round %d: stopping a leader and a standby did not end", round)
		}
	}
}
