package statusapi

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/trainmaster/master/go/discovery"
)

// goldenStatus sets every field of a Status.
func goldenStatus() Status {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	eta1, eta2 := 12.5, 40.25
	return Status{Time: t0, Leading: true,
		Masters:      []discovery.Master{{Candidate: discovery.Candidate{Host: "node-a", PID: 41, HTTP: "10.0.0.5:8081"}, Key: "/master/lock/1", Leading: true}},
		MastersError: "etcd slow",
		Job: &JobStatus{Name: "train", Round: 1, Dataset: []string{"/data/*.recordio"}, Files: 8, Chunks: 520, ChunksPerTask: 10,
			Tasks: 52, Records: 16000, Pass: 1, Passes: 3, Todo: 20, Pending: 6, Done: 24, Failed: 2, RecordsDone: 7400, Pieces: 1,
			RecordsPerSecond: 2735.5, PassETASeconds: &eta1, JobETASeconds: &eta2,
			Discarded: []DiscardedTask{{Task: 5, Timeouts: 2, Reason: "disk"}},
			Group: &GroupStatus{Ranks: 3, Batch: 32, Batches: 167, Records: 16000, RanksNotShown: 1, PerRank: []RankStatus{
				{Rank: 0, Trainers: []string{"gpu0-17", "unnamed"}, Share: 5334, Handed: 2500, Done: 2400},
				{Rank: 1, Trainers: []string{}, Share: 5333}}},
			Rewound: &RewindStatus{Checkpoint: 7, Restart: "r2", Generation: 1767225600000, Pass: 1, Left: 9120}},
		Datasets: []JobStatus{{Name: "eval", RecordsPerTask: 10, Dataset: []string{}, Tasks: 3, Records: 25, Passes: 1, Discarded: []DiscardedTask{}}},
		Checkpoints: &CheckpointsStatus{Last: CheckpointStatus{ID: 7, Name: "r1-120", Time: t0.Add(-90 * time.Second), Trainers: 3, Pinned: true},
			Kept: []int64{3, 6, 7}, Pinned: []int64{3, 7}},
		Trainers: []TrainerStatus{{Name: "trainer-0", TasksPass: 1, RecordsPass: 300, TasksTotal: 9, RecordsTotal: 2900, RecordsPerSecond: 3.5,
			Task: &HeldTask{Dataset: "train", Index: 17, Pass: 1, Since: t0.Add(-42 * time.Second), HeldSeconds: 42}, Holding: 2,
			Failures: 1, Timeouts: 3, LastSeen: t0.Add(-time.Second), Stalled: true, Connected: true},
			{Name: "trainer-1", LastSeen: t0.Add(-time.Minute), Stalled: true, Lost: true}},
		TrainersTotal: 2, TrainersConnected: 1, TrainersStalled: 2, TrainersUntracked: 3,
		Rate:   []RatePoint{{Time: t0, RecordsPerSecond: 12.25}},
		Events: []Event{{Time: t0, Dataset: "train", Task: 5, Pass: 1, Trainer: "trainer-0", Cause: "failed", Discarded: true, Reason: "disk"}},
	}
}

// TestStatusJSON: the JSON of a status with every field set, and of an
// empty one, as the side door encodes them, byte for byte: the names are
// a contract.
func TestStatusJSON(t *testing.T) {
	want, err := os.ReadFile("testdata/status.golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	enc := json.NewEncoder(&got)
	enc.SetIndent("", "  ")
	for _, st := range []Status{goldenStatus(), {}} {
		if err := enc.Encode(st); err != nil {
			t.Fatal(err)
		}
	}
	if got.String() != string(want) {
		t.Errorf("JSON:\n%s\nwant:\n%s", got.String(), want)
	}
	var back Status
	if err := json.NewDecoder(bytes.NewReader(want)).Decode(&back); err != nil {
		t.Fatal(err)
	}
	if again, _ := json.Marshal(back); !bytes.Equal(again, must(json.Marshal(goldenStatus()))) {
		t.Errorf("decoded and encoded again:\n%s", again)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
