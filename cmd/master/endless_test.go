package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/trainmaster/master/go/client"
	"github.com/trainmaster/master/go/discovery"
	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/etcdembed/etcdtest"
	"github.com/trainmaster/master/internal/taskqueue"
)

// TestFlagPassesZeroIsEndless: -passes 0 runs the queues without end, and
// a negative number of passes is still refused.
func TestFlagPassesZeroIsEndless(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		passes  int
		endless bool
	}{
		{nil, taskqueue.DefaultPasses, false},
		{[]string{"-passes", "3"}, 3, false},
		{[]string{"-passes", "0"}, 0, true},
	} {
		o, err := parseFlags(tc.args, &strings.Builder{})
		if err != nil || o.queue.Passes != tc.passes || o.queue.Endless != tc.endless {
			t.Errorf("%q: passes %d, without end %v, %v", tc.args, o.queue.Passes, o.queue.Endless, err)
		}
	}
	if err := run(t.Context(), []string{"-passes", "-1"}, &strings.Builder{}); err == nil || !strings.Contains(err.Error(), "passes must be between 1") {
		t.Errorf("-passes -1: %v", err)
	}
}

// TestDatasetsFilePassesZeroIsEndless: "passes": 0 in -datasets declares
// passes without end; no "passes" leaves them to the flags.
func TestDatasetsFilePassesZeroIsEndless(t *testing.T) {
	path := filepath.Join(t.TempDir(), "datasets.json")
	content := `[{"name": "a", "records": 10, "records_per_task": 5, "passes": 0},
{"name": "b", "records": 10, "records_per_task": 5},
{"name": "c", "records": 10, "records_per_task": 5, "passes": 2}]`
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := readDatasets(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []wire.Dataset{
		{Name: "a", Records: 10, RecordsPerTask: 5, Endless: true},
		{Name: "b", Records: 10, RecordsPerTask: 5},
		{Name: "c", Records: 10, RecordsPerTask: 5, Passes: 2},
	}
	for i, d := range f.datasets {
		if d.Endless != want[i].Endless || d.Passes != want[i].Passes {
			t.Errorf("dataset %d read as %+v, want %+v", i, d, want[i])
		}
	}
}

// TestInspectEndless: a dataset stored without end shows its pass counter
// and "no end", with its queues, never "all done".
func TestInspectEndless(t *testing.T) {
	q := queueInspection{Name: "train", Counts: map[string]int{}, Endless: true,
		Dataset: &datasetSummary{Tasks: 2, Records: 100, RecordsPerTask: 50}}
	if err := q.summarise(12, 2, func(func(taskqueue.Record, error) bool) {}); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	q.print(&out)
	for _, want := range []string{", passes without end\n", "pass:       12, no end\n", "queues:     todo 2, pending 0"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in:\n%s", want, out.String())
		}
	}
	if q.AllDone || strings.Contains(out.String(), "all") {
		t.Errorf("a dataset without end done:\n%s", out.String())
	}
}

// TestEndlessPassesAcrossFailover: a real master of -passes 0 on etcd; a
// go/client trainer goes through pass after pass, its Records loop never
// ending; the leader is killed with SIGKILL at pass 3 and the standby goes
// on counting from there, still without end, as inspect shows.
func TestEndlessPassesAcrossFailover(t *testing.T) {
	srv, etcd := etcdtest.Start(t)
	endpoints := strings.Join(srv.Endpoints(), ",")
	args := []string{"-endpoints", endpoints, "-ttl", "2", "-passes", "0", "-dataset", writeDataset(t, 1), "-chunks-per-task", "10", "-task-timeout-min", "1s"}
	a := startMaster(t, args...)
	addrA := a.awaitServing(20 * time.Second)
	b := startMaster(t, args...)
	b.awaitLog("standing by", 20*time.Second)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	passes := make(chan int, 1024)
	ended := make(chan error, 1)
	go func() {
		c := client.New(discovery.NewResolver(etcd, ""), client.Config{MinBackoff: 20 * time.Millisecond, MaxBackoff: 300 * time.Millisecond, CallTimeout: 5 * time.Second})
		defer c.Close()
		last := -1
		for rec, err := range c.Records(ctx) {
			if err != nil {
				ended <- err
				return
			}
			if rec.Pass != last {
				last = rec.Pass
				select {
				case passes <- last:
				case <-ctx.Done():
				}
			}
		}
		ended <- nil
	}()
	await := func(pass int) int {
		t.Helper()
		for {
			select {
			case p := <-passes:
				if p >= pass {
					return p
				}
			case err := <-ended:
				t.Fatalf("the records loop ended before pass %d: %v", pass, err)
			case <-ctx.Done():
				t.Fatalf("pass %d never came", pass)
			}
		}
	}
	await(3)
	if st := status(t, addrA); st.Passes != 0 || st.AllDone || st.Pass < 3 {
		t.Fatalf("the leader's status %+v: want pass 3 or more, no end", st)
	}
	a.signal(syscall.SIGKILL)
	stored := storedPass(t, etcd)
	addrB := b.awaitServing(20 * time.Second)
	if st := status(t, addrB); st.Passes != 0 || st.AllDone || st.Pass < stored {
		t.Fatalf("the standby's status %+v: want pass %d or more, no end", st, stored)
	}
	reached := await(stored + 3)
	cancel()
	if err := <-ended; err != nil && !strings.Contains(err.Error(), context.Canceled.Error()) {
		t.Fatalf("the records loop ended with %v", err)
	}
	t.Logf("pass %d stored at the kill, pass %d reached under the standby", stored, reached)

	out, err := exec.Command(binPath, "inspect", "-endpoints", endpoints, "-json").CombinedOutput()
	var in inspection
	if err != nil || json.Unmarshal(out, &in) != nil || !in.Endless || in.AllDone || in.Passes != 0 || in.Pass < reached {
		t.Fatalf("inspect: %v\n%s", err, out)
	}
}

// storedPass reads the pass of train stored in etcd.
func storedPass(t *testing.T, cli *clientv3.Client) int {
	t.Helper()
	resp, err := cli.Get(context.Background(), "/task_queues/train/pass")
	if err != nil || len(resp.Kvs) == 0 {
		t.Fatalf("read pass: %v", err)
	}
	var p struct{ Pass int }
	if err := json.Unmarshal(resp.Kvs[0].Value, &p); err != nil {
		t.Fatal(err)
	}
	return p.Pass
}
