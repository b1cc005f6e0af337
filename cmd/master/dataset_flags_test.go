package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDeclaredDatasetFlags: -dataset makes the master serve its own
// dataset, a trainer's report of another is refused without being opened,
// and -dataset-root keeps reports inside a directory. The start-up log says
// which of the three the master does.
func TestDeclaredDatasetFlags(t *testing.T) {
	pattern := writeDataset(t, 2) // 2 files of 50 chunks
	root := filepath.Dir(pattern)

	t.Run("declared", func(t *testing.T) {
		p := startMaster(t, "-data-dir", t.TempDir(), "-dataset", pattern+","+pattern, "-dataset-root", root, "-chunks-per-task", "5")
		addr := p.awaitServing(30 * time.Second)
		if st := status(t, addr); !st.DatasetReported || st.Tasks != 20 {
			t.Fatalf("status of a master started with -dataset: %+v", st)
		}
		err := call(t, addr, "Master.ReportDataset", []string{"/etc/passwd"}, new(int))
		if err == nil || !strings.Contains(err.Error(), "/etc/passwd") || !strings.Contains(err.Error(), pattern) {
			t.Fatalf("report of another dataset: %v", err)
		}
		if err := call(t, addr, "Master.ReportDataset", []string{pattern, pattern}, new(int)); err != nil {
			t.Fatalf("report of the declared dataset: %v", err)
		}
		p.awaitLog("dataset declared: trainers' reports are only compared with it", time.Second)
	})

	t.Run("root", func(t *testing.T) {
		p := startMaster(t, "-data-dir", t.TempDir(), "-dataset-root", root)
		addr := p.awaitServing(30 * time.Second)
		for _, outside := range []string{"/etc/passwd", root + "/../*"} {
			err := call(t, addr, "Master.ReportDataset", []string{outside}, new(int))
			if err == nil || !strings.Contains(err.Error(), "outside") {
				t.Fatalf("report of %s with -dataset-root %s: %v", outside, root, err)
			}
		}
		if err := call(t, addr, "Master.ReportDataset", []string{pattern}, new(int)); err != nil {
			t.Fatalf("report inside the root: %v", err)
		}
		p.awaitLog("inside the root only", time.Second)
	})

	t.Run("open", func(t *testing.T) {
		p := startMaster(t, "-data-dir", t.TempDir())
		p.awaitServing(30 * time.Second)
		p.awaitLog("may name any file this master can read", time.Second)
	})

	t.Run("declared dataset missing", func(t *testing.T) {
		missing := filepath.Join(t.TempDir(), "nothing-*.recordio")
		cmd := exec.Command(binPath, "-addr", "127.0.0.1:0", "-data-dir", t.TempDir(), "-dataset", missing)
		done := make(chan struct{})
		var out []byte
		var err error
		go func() {
			defer close(done)
			out, err = cmd.CombinedOutput()
		}()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Fatalf("the master kept running with a declared dataset that matches no file:\n%s", lastLines(string(out), 20))
		}
		if err == nil || !strings.Contains(string(out), "refusing to serve") || !strings.Contains(string(out), missing) {
			t.Fatalf("exit %v; want a refusal naming %s:\n%s", err, missing, lastLines(string(out), 20))
		}
	})
}
