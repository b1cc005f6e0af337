package main

import (
	"bufio"
	"net/rpc"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trainmaster/master/go/wire"
)

// TestProcessServesAndStopsOnSignal starts the real binary, talks to it and
// stops it with SIGTERM.
func TestProcessServesAndStopsOnSignal(t *testing.T) {
	cmd := exec.Command(binPath, "-addr", "127.0.0.1:0", "-log-level", "debug", "-data-dir", t.TempDir())
	cmd.Env = append(os.Environ(), "MASTER_PASSES=2")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := bufio.NewScanner(stderr)
	addrRE := regexp.MustCompile(`addr="?(127\.0\.0\.1:\d+)`)
	var addr string
	for addr == "" && lines.Scan() {
		if m := addrRE.FindStringSubmatch(lines.Text()); m != nil {
			addr = m[1]
		}
	}
	if addr == "" {
		t.Fatal("the master never said where it serves")
	}
	c, err := rpc.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	var task wire.Task
	if err := c.Call("Master.GetTask", wire.Task{}, &task); !wire.Is(err, wire.TextNoDataset) {
		t.Fatalf("GetTask: %v", err)
	}
	c.Close()

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var rest strings.Builder
	for lines.Scan() {
		rest.WriteString(lines.Text() + "\n")
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit: %v\n%s", err, rest.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the master did not stop on SIGTERM")
	}
	if !strings.Contains(rest.String(), "resigned the master lock") {
		t.Fatalf("no shutdown log line:\n%s", rest.String())
	}
}

func TestFlagErrors(t *testing.T) {
	var out strings.Builder
	for _, args := range [][]string{
		{"-passes", "-2"},
		{"-task-timeout-min", "1h", "-task-timeout", "1m"},
		{"-log-level", "loud"},
		{"stray"},
		{"-ttl", "1"},
		{"-endpoints", "http://127.0.0.1:1", "-etcd-dial-timeout", "300ms"},
	} {
		if err := run(t.Context(), args, &out); err == nil {
			t.Errorf("master %q started", args)
		}
	}
}

// TestDatasetsFileErrors: a -datasets file that cannot be used stops the
// master before it starts, naming the file and what is wrong.
func TestDatasetsFileErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, content, want string
	}{
		{"not json", `[{"name": "eval",`, "want a JSON array of datasets"},
		{"unknown key", `[{"name": "eval", "record": 10, "records_per_task": 1}]`, `unknown field "record"`},
		{"no name", `[{"records": 10, "records_per_task": 1}]`, "dataset 1 of 1 has no name"},
		{"twice", `[{"name": "eval", "records": 10, "records_per_task": 1}, {"name": "eval", "records": 10, "records_per_task": 1}]`, `dataset "eval" declared twice`},
		{"bad name", `[{"name": "Eval", "records": 10, "records_per_task": 1}]`, `dataset name "Eval"`},
		{"files and records", `[{"name": "eval", "patterns": ["/x"], "records": 10, "records_per_task": 1}]`, "gives both files and a number of records"},
		{"two values", `[] []`, "more than one JSON value"},
		{"missing file", "", "no such file"},
	} {
		path := filepath.Join(dir, tc.name+".json")
		if tc.content != "" {
			if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		var out strings.Builder
		err := run(t.Context(), []string{"-datasets", path, "-endpoints", "http://127.0.0.1:1"}, &out)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want an error containing %q", tc.name, err, tc.want)
		}
	}
}
