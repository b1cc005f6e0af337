package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trainmaster/master/internal/statusapi"
)

// TestDoorThroughAFailover: the side door of the leader and of the standby
// during a real job (processes, etcd, net/rpc on loopback): probes,
// progress, named trainers, a failed task's reason and the masters from
// the lock keys; then the leader is killed and the standby's door shows it
// leading, its trainers back as they call it.
func TestDoorThroughAFailover(t *testing.T) {
	j := startObservedJob(t, "-passes", "2", "-task-timeout-max", "1")
	pattern := writeDataset(t, 4)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errs := j.train(ctx, 3, pattern, 5*time.Millisecond, 5)

	for _, probe := range []struct {
		url  string
		want int
	}{
		{j.leaderURL() + "healthz", 200}, {j.standbyURL() + "healthz", 200},
		{j.leaderURL() + "readyz", 200}, {j.standbyURL() + "readyz", 503},
	} {
		resp, err := http.Get(probe.url)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != probe.want {
			t.Errorf("GET %s: %s, want %d", probe.url, resp.Status, probe.want)
		}
	}

	discardEvent := func(e statusapi.Event) bool {
		return e.Task == 5 && strings.HasPrefix(e.Trainer, "trainer-") && e.Discarded && e.Cause == "failed"
	}
	// The queues show a change as it is made, the events once it is
	// durable: wait for both.
	st := awaitStatus(t, j.leaderURL(), 30*time.Second, func(st statusapi.Status) bool {
		return st.Job != nil && st.Job.Done >= 10 && st.Job.Failed == 1 && st.TrainersTotal == 3 && slices.ContainsFunc(st.Events, discardEvent)
	})
	if !st.Leading || len(st.Masters) != 2 || !st.Masters[0].Leading || st.Masters[0].HTTP+"/" != strings.TrimPrefix(j.leaderURL(), "http://") {
		t.Errorf("leader's status: leading %v, masters %+v (its page %s)", st.Leading, st.Masters, j.leaderURL())
	}
	if d := st.Job.Discarded; len(d) != 1 || d[0].Task != 5 || !strings.Contains(d[0].Reason, "injected failure of task 5") {
		t.Errorf("discarded tasks: %+v", d)
	}
	var names []string
	for _, tr := range st.Trainers {
		names = append(names, tr.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"trainer-0", "trainer-1", "trainer-2"}) {
		t.Errorf("trainers %v", names)
	}
	var ins inspection
	out, err := exec.Command(binPath, "inspect", "-endpoints", strings.Join(j.endpoints, ","), "-json").Output()
	if err != nil || json.Unmarshal(out, &ins) != nil || len(ins.Masters) != 2 || ins.Masters[0].HTTP != st.Masters[0].HTTP ||
		ins.Masters[1].HTTP != st.Masters[1].HTTP || ins.Masters[1].Leading {
		t.Errorf("inspect: %v %s", err, out)
	}
	standby := statusOf(t, j.standbyURL())
	if standby.Leading || standby.Job != nil || len(standby.Masters) != 2 || standby.Masters[0].Leading == false {
		t.Errorf("standby's status: leading %v, job %v, masters %+v", standby.Leading, standby.Job, standby.Masters)
	}

	j.masters[j.lead].cmd.Process.Kill()
	st = awaitStatus(t, j.standbyURL(), 40*time.Second, func(st statusapi.Status) bool {
		return st.Leading && st.Job != nil && st.TrainersTotal == 3
	})
	if len(st.Masters) != 1 || !st.Masters[0].Leading || st.Masters[0].HTTP+"/" != strings.TrimPrefix(j.standbyURL(), "http://") {
		t.Errorf("masters after the failover: %+v", st.Masters)
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if st := statusOf(t, j.standbyURL()); !st.Job.AllDone || st.Job.Pass != 2 {
		t.Errorf("after training: %+v", st.Job)
	}
}

// awaitStatus polls a master's status until ok holds, and returns it.
func awaitStatus(t *testing.T, pageURL string, limit time.Duration, ok func(statusapi.Status) bool) statusapi.Status {
	t.Helper()
	var st statusapi.Status
	for deadline := time.Now().Add(limit); ; time.Sleep(50 * time.Millisecond) {
		if st = statusOf(t, pageURL); ok(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("status of %s after %v: %+v", pageURL, limit, st)
		}
	}
}
