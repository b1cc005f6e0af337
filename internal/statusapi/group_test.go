package statusapi

import "testing"

// TestGroupText: a group in a few words, one of each in the singular.
func TestGroupText(t *testing.T) {
	for _, tc := range []struct {
		g    GroupStatus
		want string
	}{
		{GroupStatus{Ranks: 3, Batch: 32, Batches: 105}, "group of 3 ranks, batch 32, 105 batches a rank"},
		{GroupStatus{Ranks: 1, Batch: 10, Batches: 1}, "group of 1 rank, batch 10, 1 batch a rank"},
	} {
		if got := tc.g.Text(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.g, got, tc.want)
		}
	}
}
