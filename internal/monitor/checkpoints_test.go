package monitor

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/master"
	"github.com/trainmaster/master/internal/statusapi"
	"github.com/trainmaster/master/internal/taskqueue"
)

// TestCheckpointsOfTheService: a job of train and eval takes data
// checkpoints and is rewound to one. The status shows the newest kept
// (ID, name, time, trainers, pinned) and the IDs kept, and each dataset's
// last rewind (the checkpoint, the restart, the pass, the records left,
// the generation), train's as job.rewound, eval's in datasets; the
// counters count the checkpoints stored (a retry is not one) and the
// datasets rewound (once per restart); the gauges give the newest's ID
// and time, 0 while none is kept, and a standby has none. A monitor that was told nothing (a new leader's) shows the
// same from the service, its counters at 0.
func TestCheckpointsOfTheService(t *testing.T) {
	m, c := newMonitor(Config{})
	svc := twoDatasets(t, m, c)
	m.Lead(svc)
	col := m.Collector()
	ctx := context.Background()
	if st := m.Status(); st.Checkpoints != nil || st.Job.Rewound != nil {
		t.Fatalf("before any checkpoint: %+v, %+v", st.Checkpoints, st.Job.Rewound)
	}
	if err := testutil.CollectAndCompare(col, strings.NewReader(`# HELP trainmaster_checkpoint_last_id The ID of the newest data checkpoint kept; 0 while none is.
# TYPE trainmaster_checkpoint_last_id gauge
trainmaster_checkpoint_last_id 0
`), "trainmaster_checkpoint_last_id"); err != nil {
		t.Errorf("while none is kept: %v", err)
	}
	task, err := svc.GetTask(ctx, wire.Task{Trainer: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.GetTask(ctx, wire.Task{Trainer: "e", Dataset: "eval"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.TaskFinished(ctx, task); err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"step-1", "step-2", "step-2"} {
		c.advance(time.Minute)
		if rep, err := svc.Checkpoint(ctx, wire.Checkpoint{Name: name, Trainer: "a", Trainers: 1, Pin: i > 0}); err != nil || rep.ID != int64(min(i+1, 2)) {
			t.Fatalf("checkpoint %q: %+v, %v", name, rep, err)
		}
	}
	stored := time.Date(2026, 1, 1, 12, 2, 0, 0, time.UTC)
	want := &statusapi.CheckpointsStatus{Last: statusapi.CheckpointStatus{ID: 2, Name: "step-2", Time: stored, Trainers: 1, Pinned: true},
		Kept: []int64{1, 2}, Pinned: []int64{2}}
	if st := m.Status(); !reflect.DeepEqual(st.Checkpoints, want) {
		t.Errorf("checkpoints %+v, want %+v", st.Checkpoints, want)
	}

	rep, err := svc.Rewind(ctx, wire.Rewind{ID: 1, Restart: "r1"})
	if err != nil || !rep.Rewound {
		t.Fatalf("rewind: %+v, %v", rep, err)
	}
	if again, err := svc.Rewind(ctx, wire.Rewind{ID: 1, Restart: "r1"}); err != nil || again.Rewound {
		t.Fatalf("the restart's second rewind: %+v, %v", again, err)
	}
	gen := int(c.Now().UnixMilli())
	st := m.Status()
	if want := (&statusapi.RewindStatus{Checkpoint: 1, Restart: "r1", Generation: gen, Pass: 0, Left: 9}); !reflect.DeepEqual(st.Job.Rewound, want) {
		t.Errorf("train rewound %+v, want %+v", st.Job.Rewound, want)
	}
	// eval: 25 records, its task 0 of 10 held but not reported trained.
	if want := (&statusapi.RewindStatus{Checkpoint: 1, Restart: "r1", Generation: gen, Pass: 0, Left: 25}); len(st.Datasets) != 1 ||
		!reflect.DeepEqual(st.Datasets[0].Rewound, want) {
		t.Errorf("eval rewound %+v, want %+v", st.Datasets, want)
	}
	if !slices.Equal(rep.Datasets, []string{"eval", "train"}) {
		t.Fatalf("rewound %q", rep.Datasets)
	}
	metrics := func(rewinds int) string {
		return fmt.Sprintf(`# HELP trainmaster_checkpoint_last_id The ID of the newest data checkpoint kept; 0 while none is.
# TYPE trainmaster_checkpoint_last_id gauge
trainmaster_checkpoint_last_id 2
# HELP trainmaster_checkpoint_last_timestamp_seconds When the newest data checkpoint kept was stored, in Unix seconds; 0 while none is.
# TYPE trainmaster_checkpoint_last_timestamp_seconds gauge
trainmaster_checkpoint_last_timestamp_seconds %d
# HELP trainmaster_checkpoints_total Data checkpoints stored (Master.Checkpoint) while this process led; a retry answered a stored one's ID is not counted.
# TYPE trainmaster_checkpoints_total counter
trainmaster_checkpoints_total %d
# HELP trainmaster_rewinds_total Datasets taken back to a data checkpoint (Master.Rewind) while this process led: each dataset of a rewind counts, once per restart.
# TYPE trainmaster_rewinds_total counter
trainmaster_rewinds_total %d
`, stored.Unix(), rewinds, rewinds)
	}
	names := []string{"trainmaster_checkpoint_last_id", "trainmaster_checkpoint_last_timestamp_seconds", "trainmaster_checkpoints_total", "trainmaster_rewinds_total"}
	if err := testutil.CollectAndCompare(col, strings.NewReader(metrics(2)), names...); err != nil {
		t.Error(err)
	}

	raw, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"checkpoints":{"last":{"id":2,"name":"step-2","time":"2026-01-01T12:02:00Z","trainers":1,"pinned":true},"kept":[1,2],"pinned":[2]}`,
		fmt.Sprintf(`"rewound":{"checkpoint":1,"restart":"r1","generation":%d,"pass":0,"records_left":9}`, gen)} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("no %s in %s", want, raw)
		}
	}

	// A new leader's monitor, told nothing, reads the same of the service.
	fresh, _ := newMonitor(Config{})
	fresh.Lead(svc)
	if got := fresh.Status(); !reflect.DeepEqual(got.Checkpoints, st.Checkpoints) || !reflect.DeepEqual(got.Job.Rewound, st.Job.Rewound) {
		t.Errorf("a new monitor shows %+v and %+v", got.Checkpoints, got.Job.Rewound)
	}
	if err := testutil.CollectAndCompare(fresh.Collector(), strings.NewReader(metrics(0)), names...); err != nil {
		t.Error(err)
	}
	fresh.Lead(nil)
	if got := fresh.Status(); got.Checkpoints != nil {
		t.Errorf("a standby shows checkpoints: %+v", got.Checkpoints)
	}
	if n := testutil.CollectAndCount(fresh.Collector(), "trainmaster_checkpoint_last_id", "trainmaster_checkpoint_last_timestamp_seconds"); n != 0 {
		t.Errorf("a standby exports %d gauges of the last checkpoint", n)
	}
}

// TestRewoundOfAnySource: a dataset's generation becomes its last rewind,
// a mark not understood naming no checkpoint; the zero generation none.
func TestRewoundOfAnySource(t *testing.T) {
	for _, tc := range []struct {
		name string
		gen  taskqueue.Generation
		want *statusapi.RewindStatus
		text string
	}{
		{"never rewound", taskqueue.Generation{}, nil, ""},
		{"rewound", taskqueue.Generation{Gen: 17, Pass: 2, Left: 1, Mark: "checkpoint 7, restart r2"},
			&statusapi.RewindStatus{Checkpoint: 7, Restart: "r2", Generation: 17, Pass: 2, Left: 1},
			"rewound to checkpoint 7 for restart r2: pass 3 again, 1 record to train (generation 17)"},
		{"a mark not understood", taskqueue.Generation{Gen: 3, Pass: 0, Left: 40, Mark: "by hand"},
			&statusapi.RewindStatus{Generation: 3, Left: 40},
			"rewound to a data checkpoint: pass 1 again, 40 records to train (generation 3)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := newMonitor(Config{})
			m.Lead(jobSource{{Name: wire.DefaultDataset, Tasks: 10, Records: 100, Passes: 3, Todo: 10, Gen: tc.gen}})
			got := m.Status().Job.Rewound
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("rewound %+v, want %+v", got, tc.want)
			}
			if got != nil && got.Text() != tc.text {
				t.Errorf("text %q, want %q", got.Text(), tc.text)
			}
		})
	}
}

var _ master.Observer = (*Monitor)(nil)
