package monitor

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/master"
	"github.com/trainmaster/master/internal/statusapi"
	"github.com/trainmaster/master/internal/taskqueue"
)

// TestGroupOfTheService: ranks of a group train train's pass (4 tasks of
// 3 records; 3 ranks of batch 2: shares of 4, 2 batches each). The status
// shows the group of the pass with each rank's share, the records handed
// to it and done, and who holds its tasks; /status.json has it as
// job.group; eval, trained outside any group, has none.
func TestGroupOfTheService(t *testing.T) {
	m, c := newMonitor(Config{})
	svc := twoDatasets(t, m, c)
	m.Lead(svc)
	ctx := context.Background()
	ask := func(finished wire.Task, rank int) wire.Task {
		t.Helper()
		finished.Trainer, finished.Rank, finished.Ranks, finished.Batch = "rank-"+string(rune('0'+rank)), rank, 3, 2
		task, err := svc.GetTask(ctx, finished)
		if err != nil {
			t.Fatalf("rank %d: %v", rank, err)
		}
		return task
	}
	if st := m.Status(); st.Job == nil || st.Job.Group != nil {
		t.Fatalf("a group before any rank asked: %+v", st.Job)
	}
	first := ask(wire.Task{}, 0) // task 0, 3 records
	second := ask(first, 0)      // finishes task 0; task 1 cut at 1 for rank 0's share
	ask(wire.Task{}, 1)          // the piece of task 1's rest, 2 records
	if second.To != 1 || second.RankLeft != 0 {
		t.Fatalf("rank 0's second task: %+v", second)
	}
	if _, err := svc.GetTask(ctx, wire.Task{Dataset: "eval", Trainer: "e"}); err != nil {
		t.Fatal(err)
	}
	st := m.Status()
	want := &statusapi.GroupStatus{Ranks: 3, Batch: 2, Batches: 2, Records: 12, PerRank: []statusapi.RankStatus{
		{Rank: 0, Trainers: []string{"rank-0"}, Share: 4, Handed: 4, Done: 3},
		{Rank: 1, Trainers: []string{"rank-1"}, Share: 4, Handed: 2},
		{Rank: 2, Trainers: []string{}, Share: 4},
	}}
	if st.Job == nil || !reflect.DeepEqual(st.Job.Group, want) {
		t.Fatalf("train's group: %+v, want %+v", st.Job.Group, want)
	}
	if len(st.Datasets) != 1 || st.Datasets[0].Group != nil {
		t.Errorf("eval's group: %+v", st.Datasets)
	}
	raw, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Job struct {
			Group map[string]any `json:"group"`
		} `json:"job"`
		Datasets []map[string]any `json:"datasets"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if g := doc.Job.Group; g["ranks"] != 3.0 || g["batch"] != 2.0 || g["batches_per_rank"] != 2.0 || g["records"] != 12.0 || g["ranks_not_shown"] != 0.0 {
		t.Errorf("job.group in JSON: %v", g)
	}
	if _, ok := doc.Datasets[0]["group"]; ok {
		t.Errorf("eval in JSON has a group: %v", doc.Datasets[0])
	}
}

// TestGroupOfAnySource: the monitor counts a group's batches a rank and
// the ranks beyond those the source lists, of any dataset.
func TestGroupOfAnySource(t *testing.T) {
	many := make([]taskqueue.RankFigure, master.MaxShownRanks)
	for r := range many {
		many[r] = taskqueue.RankFigure{Rank: r, Share: 10}
	}
	for _, tc := range []struct {
		name  string
		group *master.GroupState
		want  *statusapi.GroupStatus // PerRank's length and ranks only
	}{
		{"none", nil, nil},
		{"100 ranks, 64 listed", &master.GroupState{Group: wire.Group{Ranks: 100, Batch: 4}, PassRecords: 1000, PerRank: many},
			&statusapi.GroupStatus{Ranks: 100, Batch: 4, Batches: 3, Records: 1000, RanksNotShown: 36}},
		{"the B-1,1 corner counts K all the same", &master.GroupState{Group: wire.Group{Ranks: 2, Batch: 16}, PassRecords: 65, PerRank: many[:2]},
			&statusapi.GroupStatus{Ranks: 2, Batch: 16, Batches: 3, Records: 65}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := newMonitor(Config{})
			m.Lead(jobSource{{Name: "eval", Tasks: 10, Records: 1000, Passes: 1, Todo: 10, Group: tc.group}})
			st := m.Status()
			if len(st.Datasets) != 1 {
				t.Fatalf("datasets: %+v", st.Datasets)
			}
			got := st.Datasets[0].Group
			if (got == nil) != (tc.want == nil) {
				t.Fatalf("group %+v, want %+v", got, tc.want)
			}
			if got == nil {
				return
			}
			if len(got.PerRank) != len(tc.group.PerRank) || got.PerRank[len(got.PerRank)-1].Rank != len(tc.group.PerRank)-1 {
				t.Errorf("%d ranks listed: %+v", len(got.PerRank), got.PerRank)
			}
			got.PerRank = nil
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("group %+v, want %+v", got, tc.want)
			}
		})
	}
}
