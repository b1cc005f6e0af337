package statusapi

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// CheckpointsStatus is the job's data checkpoints (protocol.md, Data
// checkpoints): those the leader keeps, as etcd holds them, so that a new
// leader shows its predecessor's.
type CheckpointsStatus struct {
	Last   CheckpointStatus `json:"last"`   // the newest kept
	Kept   []int64          `json:"kept"`   // the IDs kept, oldest first
	Pinned []int64          `json:"pinned"` // the IDs of kept that are pinned
}

// CheckpointStatus is one data checkpoint.
type CheckpointStatus struct {
	ID       int64     `json:"id"`
	Name     string    `json:"name"`     // the name its trainers gave it
	Time     time.Time `json:"time"`     // when it was stored
	Trainers int       `json:"trainers"` // the trainers that took it together
	Pinned   bool      `json:"pinned"`   // kept beyond -checkpoints-kept
}

// RewindStatus is a dataset's last rewind to a data checkpoint: the pass
// state's generation it started.
type RewindStatus struct {
	Checkpoint int64  `json:"checkpoint"` // the checkpoint's ID; 0 when the mark is not understood
	Restart    string `json:"restart"`    // the name of the restart that rewound
	Generation int    `json:"generation"` // the pass state's generation it started
	Pass       int    `json:"pass"`       // the pass it went back to, from 0
	Left       int64  `json:"records_left"`
}

// Text describes the rewind in a few words, passes counted from 1:
// "rewound to checkpoint 7 for restart r2: pass 2 again, 4200 records to
// train (generation 1764343920123)".
func (r *RewindStatus) Text() string {
	to := fmt.Sprintf("rewound to checkpoint %d for restart %s", r.Checkpoint, r.Restart)
	if r.Checkpoint == 0 {
		to = "rewound to a data checkpoint"
	}
	records := "records"
	if r.Left == 1 {
		records = "record"
	}
	return fmt.Sprintf("%s: pass %d again, %d %s to train (generation %d)", to, r.Pass+1, r.Left, records, r.Generation)
}

// KeptText lists the IDs kept for people, the pinned ones marked: "3
// (pinned), 5, 6".
func (c *CheckpointsStatus) KeptText() string {
	ids := make([]string, 0, len(c.Kept))
	for _, id := range c.Kept {
		s := strconv.FormatInt(id, 10)
		if slices.Contains(c.Pinned, id) {
			s += " (pinned)"
		}
		ids = append(ids, s)
	}
	return strings.Join(ids, ", ")
}
