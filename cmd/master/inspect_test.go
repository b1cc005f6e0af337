package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/rpc"
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
			checkPrinted(t, q, tc.has, tc.lacks)
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

// TestInspectGroup: where ranks of a group train the pass, inspect says
// the group, names the rank holding each pending task (by its trainer's
// name, or none) and that it has no deadline, rather than a zero one of
// year 1; -json gives each pending and done task's rank; a pass trained
// outside any group shows its deadlines and no rank, as before.
func TestInspectGroup(t *testing.T) {
	g := wire.Group{Ranks: 3, Batch: 4}
	deadline := time.Date(2026, 11, 22, 4, 27, 4, 0, time.UTC)
	entry := func(index int, e taskqueue.Entry) taskqueue.Record {
		e.Epoch = 1
		return taskqueue.Record{Index: index, Entry: e}
	}
	for _, tc := range []struct {
		name       string
		records    []taskqueue.Record
		has, lacks []string
		json       string // the group, pending and done tasks in -json
	}{{
		name: "a group's pass",
		records: []taskqueue.Record{
			entry(0, taskqueue.Entry{Queue: taskqueue.Done, Rank: 0, Group: g}),
			entry(1, taskqueue.Entry{Queue: taskqueue.Pending, Trainer: "rank-0", Rank: 0, Group: g, Of: 1, To: 4}),
			entry(4, taskqueue.Entry{Queue: taskqueue.Pending, Rank: 1, Group: g, Of: 1, From: 4, To: 10}),
			entry(2, taskqueue.Entry{Queue: taskqueue.Done, Rank: 1, Group: g}),
		},
		has: []string{
			"queues:     todo 1, pending 2, done 2, failed 0 (4 tasks and 1 pieces cut at the ranks' shares)\n",
			"group:      3 ranks, batch 4\n",
			"pending:    task 1 (cut short at record 4) epoch 1 held by rank-0 (rank 0 of 3), no deadline (a rank's) (timeouts 0)\n",
			"pending:    piece 4 (task 1, records 4 to 9) epoch 1 held by rank 1 of 3, no deadline (a rank's) (timeouts 0)\n",
		},
		lacks: []string{"0001", "deadline 0"},
		json: `{"group":{"ranks":3,"batch":4},` +
			`"pending":[{"task":1,"epoch":1,"timeouts":0,"trainer":"rank-0","rank":0,"ranks":3,"to":4},` +
			`{"task":4,"epoch":1,"timeouts":0,"rank":1,"ranks":3,"piece":true,"of":1,"from":4,"to":10}],` +
			`"done":[{"task":0,"epoch":1,"timeouts":0,"rank":0,"ranks":3},{"task":2,"epoch":1,"timeouts":0,"rank":1,"ranks":3}]}`,
	}, {
		name: "outside any group",
		records: []taskqueue.Record{
			entry(0, taskqueue.Entry{Queue: taskqueue.Done}),
			entry(2, taskqueue.Entry{Queue: taskqueue.Pending, Trainer: "node-3", Deadline: deadline, Of: 2}),
		},
		has: []string{
			"queues:     todo 2, pending 1, done 1, failed 0\n",
			"pending:    task 2 epoch 1 held by node-3 deadline " + deadline.Local().Format(time.RFC3339) + " (timeouts 0)\n",
		},
		lacks: []string{"group", "rank"},
		json:  `{"pending":[{"task":2,"epoch":1,"timeouts":0,"deadline":"2026-11-22T04:27:04Z","trainer":"node-3"}]}`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			q := queueInspection{Name: "train", Counts: map[string]int{}, Dataset: &datasetSummary{Tasks: 4, Records: 40, RecordsPerTask: 10}}
			if err := q.summarise(0, 4, taskqueue.Stored(tc.records)); err != nil {
				t.Fatal(err)
			}
			checkPrinted(t, q, tc.has, tc.lacks)
			got, err := json.Marshal(struct {
				Group   *groupSummary `json:"group,omitempty"`
				Pending []taskSummary `json:"pending"`
				Done    []taskSummary `json:"done,omitempty"`
			}{q.Group, q.Pending, q.Done})
			if err != nil || string(got) != tc.json {
				t.Errorf("-json:\n%s, %v\nwant:\n%s", got, err, tc.json)
			}
		})
	}
}

// TestInspectGroupOfAMaster: ranks of a group ask a master over one
// connection each (kept open: they are not lost); inspect reads their
// entries from etcd and names the rank holding each pending task, with no
// deadline, and in -json the rank of the task done.
func TestInspectGroupOfAMaster(t *testing.T) {
	srv, _ := etcdtest.Start(t)
	endpoints := strings.Join(srv.Endpoints(), ",")
	// 1,000 records in tasks of 200; 3 ranks: shares of 334, 333, 333.
	addr := startMaster(t, "-endpoints", endpoints, "-dataset", writeDataset(t, 1), "-chunks-per-task", "10", "-passes", "1").
		awaitServing(30 * time.Second)
	ask := func(c *rpc.Client, finished wire.Task, rank int) wire.Task {
		t.Helper()
		finished.Trainer, finished.Rank, finished.Ranks, finished.Batch = fmt.Sprintf("rank-%d", rank), rank, 3, 32
		var task wire.Task
		if err := c.Call("Master.GetTask", finished, &task); err != nil {
			t.Fatalf("rank %d: %v", rank, err)
		}
		return task
	}
	conns := make([]*rpc.Client, 2)
	for i := range conns {
		c, err := rpc.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns[i] = c
	}
	first := ask(conns[1], wire.Task{}, 1)             // task 0: 200 records
	if cut := ask(conns[1], first, 1); cut.To != 133 { // finishes task 0; task 1 cut at 133
		t.Fatalf("rank 1's second task: %+v", cut)
	}
	ask(conns[0], wire.Task{}, 0) // piece 5: the rest of task 1
	out, err := exec.Command(binPath, "inspect", "-endpoints", endpoints).CombinedOutput()
	if err != nil {
		t.Fatalf("inspect: %v\n%s", err, out)
	}
	for _, want := range []string{
		"group:      3 ranks, batch 32\n",
		"pending:    task 1 (cut short at record 133) epoch 1 held by rank-1 (rank 1 of 3), no deadline (a rank's) (timeouts 0)\n",
		"pending:    piece 5 (task 1, records 133 to 199) epoch 1 held by rank-0 (rank 0 of 3), no deadline (a rank's) (timeouts 0)\n",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	if out, err = exec.Command(binPath, "inspect", "-endpoints", endpoints, "-json").CombinedOutput(); err != nil {
		t.Fatalf("inspect -json: %v\n%s", err, out)
	}
	var in inspection
	if err := json.Unmarshal(out, &in); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if g := in.Group; g == nil || *g != (groupSummary{Ranks: 3, Batch: 32}) || len(in.Done) != 1 || in.Done[0].Task != 0 ||
		in.Done[0].Rank == nil || *in.Done[0].Rank != 1 || len(in.Pending) != 2 || in.Pending[0].Deadline != nil {
		t.Errorf("inspect -json:\n%s", out)
	}
}

// checkPrinted checks that what inspect prints of q has every text of has
// and none of lacks.
func checkPrinted(t *testing.T, q queueInspection, has, lacks []string) {
	t.Helper()
	var out strings.Builder
	q.print(&out)
	for _, want := range has {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in:\n%s", want, out.String())
		}
	}
	for _, not := range lacks {
		if strings.Contains(out.String(), not) {
			t.Errorf("%q in:\n%s", not, out.String())
		}
	}
}
