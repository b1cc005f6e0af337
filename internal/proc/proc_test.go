package proc

import (
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestLinesLogAndExit(t *testing.T) {
	dir := t.TempDir()
	var mu sync.Mutex
	var out, errs []string
	p, err := Start(dir, "/bin/sh", "child", []string{"-c", "echo one; echo two >&2; exit 3"},
		func(l string) { mu.Lock(); out = append(out, l); mu.Unlock() },
		func(l string) { mu.Lock(); errs = append(errs, l); mu.Unlock() })
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Err(); err == nil || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("exit error %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(out) != 1 || out[0] != "one" || len(errs) != 1 || errs[0] != "two" {
		t.Fatalf("stdout %q, stderr %q", out, errs)
	}
	log, _ := os.ReadFile(p.Log)
	if !strings.Contains(string(log), "one\n") || !strings.Contains(string(log), "two\n") || !strings.Contains(string(log), "exited: exit status 3") {
		t.Fatalf("log:\n%s", log)
	}
}

func TestStopAndWait(t *testing.T) {
	p, err := Start(t.TempDir(), "/bin/sh", "sleeper", []string{"-c", "sleep 60"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(100 * time.Millisecond); err == nil || p.Exited() {
		t.Fatalf("a sleeping process reported as done: %v", err)
	}
	start := time.Now()
	p.Stop(5 * time.Second)
	if !p.Exited() || time.Since(start) > 5*time.Second {
		t.Fatalf("stopped after %v, exited %v", time.Since(start), p.Exited())
	}
}
