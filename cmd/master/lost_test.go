package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trainmaster/master/internal/etcdembed/etcdtest"
)

var (
	trainerOnce sync.Once
	trainerBin  string
	trainerErr  error
)

// trainerBinary builds cmd/trainer once, beside the master binary.
func trainerBinary(t testing.TB) string {
	t.Helper()
	trainerOnce.Do(func() {
		trainerBin = filepath.Join(filepath.Dir(binPath), "trainer")
		if out, err := exec.Command("go", "build", "-o", trainerBin, "../trainer").CombinedOutput(); err != nil {
			trainerErr = err
			trainerBin = string(out)
		}
	})
	if trainerErr != nil {
		t.Fatalf("go build ../trainer: %v\n%s", trainerErr, trainerBin)
	}
	return trainerBin
}

// awaitPending polls the master until want tasks are pending, and returns
// when it saw them.
func awaitPending(t *testing.T, addr string, want int, limit time.Duration) time.Time {
	t.Helper()
	for deadline := time.Now().Add(limit); ; time.Sleep(10 * time.Millisecond) {
		if st := status(t, addr); st.Pending == want {
			return time.Now()
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d tasks pending after %v, want %d", status(t, addr).Pending, limit, want)
		}
	}
}

// TestKilledTrainerTasksBackAtOnce: kill -9 of a real trainer process
// holding tasks (the one it trains and the one it read ahead) sends them
// back to Todo once -trainer-grace has passed, minutes before their timeout
// could, and not as timeouts.
func TestKilledTrainerTasksBackAtOnce(t *testing.T) {
	pattern := writeDataset(t, 1)
	const grace = 2 * time.Second
	srv, _ := etcdtest.Start(t)
	endpoints := strings.Join(srv.Endpoints(), ",")
	p := startMaster(t, "-endpoints", endpoints, "-ttl", "10", "-dataset", pattern, "-chunks-per-task", "1",
		"-task-timeout", "10m", "-task-timeout-min", "5m", "-trainer-grace", grace.String())
	addr := p.awaitServing(30 * time.Second)
	trainer := exec.Command(trainerBinary(t), "-addr", addr, "-name", "doomed", "-record-delay", "1s")
	if err := trainer.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		trainer.Process.Kill()
		trainer.Wait()
	})
	awaitPending(t, addr, 2, 30*time.Second)
	out, err := exec.Command(binPath, "inspect", "-endpoints", endpoints, "-json").Output()
	var ins inspection
	if err != nil || json.Unmarshal(out, &ins) != nil || len(ins.Pending) != 2 || ins.Pending[0].Trainer != "doomed" || ins.Pending[1].Trainer != "doomed" {
		t.Fatalf("inspect: %v, %+v\n%s", err, ins.Pending, out)
	}
	killed := time.Now()
	if err := trainer.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	back := awaitPending(t, addr, 0, time.Minute)
	t.Logf("the killed trainer's 2 tasks were back in todo %v after kill -9 (grace %v)", back.Sub(killed).Round(time.Millisecond), grace)
	st := status(t, addr)
	if st.Todo != st.Tasks || st.Done != 0 || st.Failed != 0 {
		t.Fatalf("status %+v, want every task in todo", st)
	}
	p.awaitLog("trainer lost", 10*time.Second)
	log := p.logText()
	if !strings.Contains(log, "trainer=doomed") || strings.Contains(log, "timed out; back in todo") {
		t.Fatalf("the tasks did not come back as the lost trainer's:\n%s", lastLines(log, 30))
	}
}
