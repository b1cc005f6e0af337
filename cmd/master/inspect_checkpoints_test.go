package main

import (
	"encoding/json"
	"net/rpc"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/etcdembed/etcdtest"
	"github.com/trainmaster/master/internal/master"
	"github.com/trainmaster/master/internal/taskqueue"
)

// TestInspectCheckpoint: -checkpoint ID prints a checkpoint in full: per
// dataset, in name order, its pass, round, generation and records
// trained, the tasks wholly trained as ranges, each task trained in part
// with its runs; -json the same as ranges and runs; the list gives one
// line a checkpoint; an ID not kept is an error naming the kept ones.
func TestInspectCheckpoint(t *testing.T) {
	at := time.Date(2026, 11, 22, 4, 17, 4, 0, time.UTC)
	whole := []int{43}
	for task := range 42 {
		whole = append(whole, task)
	}
	kept := []master.DataCheckpoint{{ID: 3, Name: "r0-120", Time: at, Trainers: 3, Pinned: true, Datasets: map[string]master.DatasetPoint{
		"train": {Round: 1, Gen: 17, Tasks: 52, Records: 13860, Trained: taskqueue.Trained{Pass: 4, Whole: append(whole[1:], 43),
			Part: map[int][]taskqueue.Interval{44: {{From: 200, To: 300}, {From: 0, To: 100}}, 42: {{From: 0, To: 312}}}}},
		"eval": {Tasks: 3, Trained: taskqueue.Trained{Part: map[int][]taskqueue.Interval{}}},
	}}, {ID: 4, Name: "r0-130", Time: at.Add(time.Minute), Trainers: 1, Datasets: map[string]master.DatasetPoint{}}}
	var out strings.Builder
	if err := printCheckpoint(&out, kept, 3, false); err != nil {
		t.Fatal(err)
	}
	want := `checkpoint: 3 "r0-120"
time:       ` + at.Local().Format(time.RFC3339) + `
trainers:   3, pinned
eval:       pass 0, round 0, generation 0: 0 records trained
  whole:    none
train:      pass 4, round 1, generation 17: 13860 records trained
  whole:    0-41, 43 (43 tasks)
  in part:  task 42: records 0 to 311
            task 44: records 200 to 299, 0 to 99
`
	if out.String() != want {
		t.Errorf("-checkpoint 3:\n%s\nwant:\n%s", out.String(), want)
	}
	out.Reset()
	if err := printCheckpoint(&out, kept, 3, true); err != nil {
		t.Fatal(err)
	}
	var got checkpointInspection
	if err := json.Unmarshal([]byte(out.String()), &got); err != nil {
		t.Fatalf("%v:\n%s", err, out.String())
	}
	train := got.Datasets[1]
	if len(got.Datasets) != 2 || got.Datasets[0].Name != "eval" || len(got.Datasets[0].Whole) != 0 || train.Name != "train" ||
		!reflect.DeepEqual(train.Whole, [][2]int{{0, 41}, {43, 43}}) ||
		!reflect.DeepEqual(train.Part, []partInspection{{Task: 42, Runs: [][2]int{{0, 312}}}, {Task: 44, Runs: [][2]int{{200, 300}, {0, 100}}}}) ||
		train.Gen != 17 || train.Round != 1 || train.Pass != 4 || train.Records != 13860 || !got.Pinned || got.Trainers != 3 {
		t.Errorf("-checkpoint 3 -json:\n%s", out.String())
	}
	for _, raw := range []string{`"whole": []`, `"part": []`} {
		if !strings.Contains(out.String(), raw) {
			t.Errorf("no %s in:\n%s", raw, out.String())
		}
	}
	if err := printCheckpoint(&out, kept, 9, false); err == nil || err.Error() != "checkpoint 9 is not kept (kept: 3, 4)" {
		t.Errorf("a checkpoint not kept: %v", err)
	}
	out.Reset()
	printCheckpoints(&out, summariseCheckpoints(kept))
	want = `checkpoints: 2 kept, the newest last (-checkpoint ID shows one in full)
checkpoint: 3 "r0-120" ` + at.Local().Format(time.RFC3339) + ` by 3 trainers, pinned: eval pass 0, 0 records trained; train pass 4, 13860 records trained
checkpoint: 4 "r0-130" ` + at.Add(time.Minute).Local().Format(time.RFC3339) + ` by 1 trainer: no dataset
`
	if out.String() != want {
		t.Errorf("the list:\n%s\nwant:\n%s", out.String(), want)
	}
}

// TestInspectRewoundPass: in a pass rewound to a checkpoint, inspect
// counts the entries of the pass key's generation only (an entry stored
// by the generation before is untouched, in Todo, as a master reads it),
// says the rewind, and says the pieces may be the rewind's.
func TestInspectRewoundPass(t *testing.T) {
	gen := taskqueue.Generation{Gen: 1767225600000, Pass: 1, Left: 25, Mark: "checkpoint 6, restart r2"}
	entry := func(index, gen int, e taskqueue.Entry) taskqueue.Record {
		e.Pass, e.Gen = 1, gen
		return taskqueue.Record{Index: index, Entry: e}
	}
	q := queueInspection{Name: "train", Counts: map[string]int{}, Dataset: &datasetSummary{Tasks: 4, Records: 40, RecordsPerTask: 10},
		Generation: generationOf(gen)}
	records := taskqueue.Stored([]taskqueue.Record{
		entry(0, gen.Gen, taskqueue.Entry{Queue: taskqueue.Done}),
		entry(1, gen.Gen, taskqueue.Entry{Queue: taskqueue.Done, To: 5}),
		entry(4, gen.Gen, taskqueue.Entry{Queue: taskqueue.Todo, Of: 1, From: 5, Progress: 5, Seq: -1}),
		entry(2, 0, taskqueue.Entry{Queue: taskqueue.Pending, Epoch: 1, Trainer: "gone"}), // the generation before's
		{Index: 3, Entry: taskqueue.Entry{Pass: 0, Queue: taskqueue.Failed, Epoch: 1, Timeouts: 3, Error: "disk"}},
	})
	q.Pass = 1
	if err := q.summarise(1, 4, records); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	q.print(&out)
	for _, want := range []string{
		"queues:     todo 3, pending 0, done 2, failed 0 (4 tasks and 1 pieces cut at the rewind or from stragglers)\n",
		`rewound:    to checkpoint 6 for restart "r2": pass 1 again, 25 records to train (generation 1767225600000)` + "\n",
		"failed in pass 0: task 3 after 3 timeouts or failures: disk\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "gone") {
		t.Errorf("an entry of the generation before counts:\n%s", out.String())
	}
	raw, _ := json.Marshal(q.Generation)
	if want := `{"gen":1767225600000,"pass":1,"records_left":25,"rewound":"checkpoint 6, restart r2","checkpoint":6,"restart":"r2"}`; string(raw) != want {
		t.Errorf("generation in -json: %s, want %s", raw, want)
	}
}

// TestInspectCheckpointsOfAMaster: a trainer of a real master takes two
// data checkpoints, the first pinned and holding half a task, then holds
// another task and rewinds to the first. inspect reads etcd: it lists
// both checkpoints, shows the rewind and the queues of the new
// generation (the task held before the rewind is in Todo: the master's
// counts), prints the first in full, and refuses an ID not kept.
func TestInspectCheckpointsOfAMaster(t *testing.T) {
	srv, _ := etcdtest.Start(t)
	endpoints := strings.Join(srv.Endpoints(), ",")
	// 1,000 records in 5 tasks of 200.
	addr := startMaster(t, "-endpoints", endpoints, "-dataset", writeDataset(t, 1), "-chunks-per-task", "10", "-passes", "1").
		awaitServing(30 * time.Second)
	c, err := rpc.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	do := func(method string, arg, reply any) {
		t.Helper()
		if err := c.Call(method, arg, reply); err != nil {
			t.Fatalf("%s: %v", method, err)
		}
	}
	var first, second, third wire.Task
	do("Master.GetTask", wire.Task{Trainer: "a"}, &first)
	first.Trainer = "a"
	do("Master.GetTask", first, &second) // finishes task 0
	var cp wire.CheckpointReply
	do("Master.Checkpoint", wire.Checkpoint{Name: "r0-1", Trainer: "a", Trainers: 1, Pin: true,
		Held: []wire.Held{{Index: second.Index, Epoch: second.Epoch, Pass: second.Pass, Done: 50}}}, &cp)
	do("Master.Checkpoint", wire.Checkpoint{Name: "r0-2", Trainer: "a", Trainers: 1}, &cp)
	do("Master.GetTask", wire.Task{Trainer: "a"}, &third) // task 2: pending in the generation before
	var rw wire.RewindReply
	do("Master.Rewind", wire.Rewind{ID: 1, Restart: "r1", Trainer: "a"}, &rw)
	if cp.ID != 2 || !rw.Rewound || second.Index != 1 || third.Index != 2 {
		t.Fatalf("checkpoint %+v, rewind %+v, tasks %d %d", cp, rw, second.Index, third.Index)
	}
	var st wire.Status
	if do("Master.Status", 0, &st); st.Todo != 4 || st.Pending != 0 || st.Done != 2 {
		t.Fatalf("the master's queues after the rewind: %+v", st)
	}
	inspect := func(args ...string) (string, error) {
		out, err := exec.Command(binPath, append([]string{"inspect", "-endpoints", endpoints}, args...)...).CombinedOutput()
		return string(out), err
	}
	out, err := inspect()
	if err != nil {
		t.Fatalf("inspect: %v\n%s", err, out)
	}
	for _, want := range []string{
		"queues:     todo 4, pending 0, done 2, failed 0 (5 tasks and 1 pieces cut at the rewind or from stragglers)\n",
		`rewound:    to checkpoint 1 for restart "r1": pass 0 again, 750 records to train (generation `,
		"checkpoints: 2 kept, the newest last",
		` by 1 trainer, pinned: train pass 0, 250 records trained` + "\n",
		` by 1 trainer: train pass 0, 200 records trained` + "\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	if out, err = inspect("-json"); err != nil {
		t.Fatalf("inspect -json: %v\n%s", err, out)
	}
	var in inspection
	if err := json.Unmarshal([]byte(out), &in); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if g := in.Generation; g == nil || g.Checkpoint != 1 || g.Restart != "r1" || g.Left != 750 || g.Gen == 0 || len(in.Pending) != 0 ||
		len(in.Checkpoints) != 2 || in.Checkpoints[0].Datasets["train"] != (pointSummary{Records: 250}) || !in.Checkpoints[0].Pinned {
		t.Errorf("inspect -json:\n%s", out)
	}
	if out, err = inspect("-checkpoint", "1"); err != nil {
		t.Fatalf("inspect -checkpoint 1: %v\n%s", err, out)
	}
	for _, want := range []string{"checkpoint: 1 \"r0-1\"\n", "trainers:   1, pinned\n", "train:      pass 0, round 0, generation 0: 250 records trained\n",
		"  whole:    0 (1 task)\n", "  in part:  task 1: records 0 to 49\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	if strings.Contains(out, "queues") {
		t.Errorf("-checkpoint prints the queues:\n%s", out)
	}
	if out, err = inspect("-checkpoint", "9"); err == nil || !strings.Contains(out, "checkpoint 9 is not kept (kept: 1, 2)") {
		t.Errorf("inspect -checkpoint 9: %v\n%s", err, out)
	}
}
