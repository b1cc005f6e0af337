package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/trainmaster/master/go/client"
	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/etcdembed/etcdtest"
	"github.com/trainmaster/master/internal/taskqueue"
)

// TestInspectPrintsPasses: a dataset whose passes are all done says so
// ("all 2 passes done") and shows no queues of a pass that does not exist;
// one under way shows its pass and its queues; one pass is "1 pass".
func TestInspectPrintsPasses(t *testing.T) {
	done := func(index int) taskqueue.Record {
		return taskqueue.Record{Index: index, Entry: taskqueue.Entry{Pass: 1, Queue: taskqueue.Done, Epoch: 1}}
	}
	for _, tc := range []struct {
		name         string
		perRound     int // the dataset's passes a round
		pass, passes int
		has, lacks   []string
	}{
		{"finished", 2, 2, 2, []string{"2 passes a round\n", "pass:       all 2 passes done\n"}, []string{"pass:       2", "queues:", "todo 2"}},
		{"under way", 2, 1, 2, []string{"pass:       1\n", "queues:     todo 0, pending 0, done 2, failed 0\n"}, []string{"all 2 passes done"}},
		{"one pass a round, finished", 1, 1, 1, []string{", 1 pass a round\n", "pass:       all 1 pass done\n"}, []string{"1 passes"}},
		{"passes unknown", 0, 2, 0, []string{"pass:       2\n", "queues:     todo 2,"}, []string{"all", "a round"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := queueInspection{Name: "eval", Counts: map[string]int{}, Passes: tc.passes,
				Dataset: &datasetSummary{Tasks: 2, Records: 100, RecordsPerTask: 50, Passes: tc.perRound}}
			records := func(yield func(taskqueue.Record, error) bool) { _ = yield(done(0), nil) && yield(done(1), nil) }
			if err := q.summarise(tc.pass, 2, records); err != nil {
				t.Fatal(err)
			}
			if want := tc.passes > 0 && tc.pass >= tc.passes; q.AllDone != want {
				t.Errorf("AllDone %v, want %v", q.AllDone, want)
			}
			var out strings.Builder
			q.print(&out)
			for _, want := range tc.has {
				if !strings.Contains(out.String(), want) {
					t.Errorf("no %q in:\n%s", want, out.String())
				}
			}
			for _, not := range tc.lacks {
				if strings.Contains(out.String(), not) {
					t.Errorf("%q in:\n%s", not, out.String())
				}
			}
		})
	}
}

// TestInspectFinishedJob: once a job of -passes 2 has trained both passes,
// `master inspect` given the master's passes (-passes, or MASTER_PASSES as
// the master reads it) says "all 2 passes done" and counts no task to do;
// without them it cannot tell, and shows the pass counter as before.
func TestInspectFinishedJob(t *testing.T) {
	srv, _ := etcdtest.Start(t)
	endpoints := strings.Join(srv.Endpoints(), ",")
	addr := startMaster(t, "-endpoints", endpoints, "-dataset", writeDataset(t, 1), "-chunks-per-task", "10", "-passes", "2").
		awaitServing(30 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := client.New(client.Static(addr), client.Config{})
	defer c.Close()
	for _, err := range c.Records(ctx) {
		if err != nil {
			t.Fatal(err)
		}
	}
	var st wire.Status
	if err := call(t, addr, "Master.Status", 0, &st); err != nil || !st.AllDone || st.Pass != 2 || st.Passes != 2 || st.Todo != 0 {
		t.Fatalf("status %+v, %v; want all 2 passes done, nothing to do", st, err)
	}
	inspect := func(env string, args ...string) string {
		cmd := exec.Command(binPath, append([]string{"inspect", "-endpoints", endpoints}, args...)...)
		cmd.Env = append(os.Environ(), env)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("inspect %q: %v\n%s", args, err, out)
		}
		return string(out)
	}
	for _, out := range []string{inspect("", "-passes", "2"), inspect("MASTER_PASSES=2")} {
		if !strings.Contains(out, "pass:       all 2 passes done\n") || strings.Contains(out, "todo") {
			t.Errorf("inspect of a finished job:\n%s", out)
		}
	}
	var in inspection
	if err := json.Unmarshal([]byte(inspect("", "-passes", "2", "-json")), &in); err != nil ||
		!in.AllDone || in.Pass != 2 || in.Passes != 2 || in.Counts["todo"] != 0 {
		t.Errorf("inspect -json: %+v, %v", in.queueInspection, err)
	}
	if out := inspect(""); !strings.Contains(out, "pass:       2\n") || strings.Contains(out, "all") {
		t.Errorf("inspect without the master's passes:\n%s", out)
	}
}
