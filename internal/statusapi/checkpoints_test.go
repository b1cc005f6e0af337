package statusapi

import "testing"

// TestCheckpointTexts: a rewind and the checkpoints kept in words, passes
// from 1, the pinned ones marked.
func TestCheckpointTexts(t *testing.T) {
	r := &RewindStatus{Checkpoint: 7, Restart: "r2", Generation: 1767225600000, Pass: 1, Left: 9120}
	if got, want := r.Text(), "rewound to checkpoint 7 for restart r2: pass 2 again, 9120 records to train (generation 1767225600000)"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	c := &CheckpointsStatus{Kept: []int64{3, 6, 7}, Pinned: []int64{3, 7}}
	if got, want := c.KeptText(), "3 (pinned), 6, 7 (pinned)"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}
