package watch

import (
	"strings"
	"testing"

	"github.com/trainmaster/master/internal/statusapi"
)

// TestWatchFinishedDataset: a job whose passes are all done says "all N
// passes done" in the view, the plain line and the final line, "1 pass"
// for one; a finished dataset beside train says how many passes its round
// had.
func TestWatchFinishedDataset(t *testing.T) {
	for _, tc := range []struct {
		passes           int
		view, plain, end string
	}{
		{2, "passes   all 2 done", "all 2 passes done |", "all 2 passes done: 52 tasks, 16000 records a pass\n"},
		{1, "passes   all 1 done", "all 1 pass done |", "all 1 pass done: 52 tasks, 16000 records a pass\n"},
	} {
		st := watchStatus()
		j := st.Job
		j.AllDone, j.Pass, j.Passes, j.Todo, j.Pending, j.Done, j.PassETASeconds, j.JobETASeconds = true, tc.passes, tc.passes, 0, 0, 0, nil, nil
		st.Datasets = append(st.Datasets, *j)
		st.Datasets[0].Name = "eval"
		view := "\n" + strings.Join(render(st, 100, watchT0), "\n") + "\n"
		eval := "\neval     round 1 done (" + statusapi.PassCount(tc.passes) + ")\n"
		if !strings.Contains(view, "\n"+tc.view+"\n") || !strings.Contains(view, eval) || strings.Contains(view, "queues") {
			t.Errorf("%d passes: view\n%s\nwant %q and %q", tc.passes, view, tc.view, eval)
		}
		if got := summary(st); !strings.HasPrefix(got, tc.plain) {
			t.Errorf("%d passes: plain line %q, want %q", tc.passes, got, tc.plain)
		}
		var out strings.Builder
		(&screen{out: &out}).done(st)
		if out.String() != tc.end {
			t.Errorf("%d passes: final line %q, want %q", tc.passes, out.String(), tc.end)
		}
	}
}
