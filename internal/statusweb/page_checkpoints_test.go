package statusweb

import (
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/trainmaster/master/internal/statusapi"
)

// TestPageCheckpoints: the page says the job's last data checkpoint (its
// ID, name escaped, age, trainers, pinned) and the IDs kept, the pinned
// ones marked; for each dataset rewound, the checkpoint and restart it
// went back to, the pass (from 1) trained again, the records left and the
// generation, named by dataset when the job has several, and that the
// pieces of the pass rewound may be the rewind's; a job without
// checkpoint or rewind shows no section; a rewind without checkpoint
// kept says none is.
func TestPageCheckpoints(t *testing.T) {
	cps := &statusapi.CheckpointsStatus{Last: statusapi.CheckpointStatus{ID: 7, Name: hostile, Time: pageNow.Add(-90 * time.Second), Trainers: 3, Pinned: true},
		Kept: []int64{3, 6, 7}, Pinned: []int64{3, 7}}
	rewound := &statusapi.RewindStatus{Checkpoint: 6, Restart: "r<2>", Generation: 1767225600000, Pass: 1, Left: 9120}
	for _, tc := range []struct {
		name   string
		edit   func(*statusapi.Status)
		checks []check
	}{{
		name: "checkpoints and train rewound",
		edit: func(st *statusapi.Status) {
			st.Checkpoints, st.Job.Rewound, st.Job.Name, st.Job.Pieces = cps, rewound, "train", 2
		},
		checks: []check{
			hasText("#queues", "52 + 2 pieces cut at the rewind or from stragglers"),
			hasText("#checkpoint-last", "Last: checkpoint 7 "+hostile+", 1 min 30 s ago, by 3 trainers pinned"),
			hasText("#checkpoints-kept", "Kept: 3 (pinned), 6, 7 (pinned)"),
			hasText(".pinned", "pinned"),
			rows(".rewound", func(n *html.Node) string { return attr(n, "data-dataset") + ": " + squeeze(textOf(n)) },
				"train: "+squeeze("Rewound to checkpoint 6 for restart r<2>: pass 2 again, 9,120 records to train (generation 1767225600000)")),
			escaped,
		},
	}, {
		name: "a checkpoint of one trainer, never rewound",
		edit: func(st *statusapi.Status) {
			st.Checkpoints = &statusapi.CheckpointsStatus{Last: statusapi.CheckpointStatus{ID: 1, Name: "step-1", Time: pageNow, Trainers: 1},
				Kept: []int64{1}, Pinned: []int64{}}
		},
		checks: []check{hasText("#checkpoint-last", "checkpoint 1 step-1, just now, by 1 trainer"), hasText("#checkpoints-kept", "Kept: 1"),
			hasText("#queues", "Tasks of this pass"),
			absent(".rewound", ".pinned")},
	}, {
		name: "eval rewound beside train, no checkpoint kept",
		edit: func(st *statusapi.Status) {
			*st = twoDatasetsStatus()
			st.Datasets[0].Rewound = &statusapi.RewindStatus{Checkpoint: 2, Restart: "r1", Generation: 5, Left: 1}
		},
		checks: []check{
			hasText("#checkpoint-last", "None kept."),
			rows(".rewound", func(n *html.Node) string { return attr(n, "data-dataset") + ": " + squeeze(textOf(n)) },
				"eval: "+squeeze("eval: Rewound to checkpoint 2 for restart r1: pass 1 again, 1 record to train (generation 5)")),
			absent("#checkpoints-kept"),
		},
	}, {
		name:   "neither",
		edit:   func(*statusapi.Status) {},
		checks: []check{absent("#checkpoints")},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			st := leaderStatus()
			tc.edit(&st)
			body, doc := render(t, st, false)
			for _, c := range tc.checks {
				c(t, body, doc)
			}
		})
	}
}
