package statusweb

import "testing"

// TestPageEndlessDataset: a dataset without end shows its pass and "no
// end" where the passes and the job's ETA were, its share of the current
// pass only, and bars for the passes done and the current one.
func TestPageEndlessDataset(t *testing.T) {
	st := twoDatasetsStatus()
	j := st.Job
	j.Pass, j.Passes, j.Endless, j.JobETASeconds = 11, 0, true, nil
	st.Datasets[0].Passes, st.Datasets[0].Pass, st.Datasets[0].Endless = 0, 2, true
	body, doc := render(t, st, false)
	for _, c := range []check{
		hasText("title", "pass 12, no end, 46%"),
		hasText("#job-state", "Pass 12 no end", "46% of this pass; passes until the job is stopped"),
		hasText("#job-eta", "no end"),
		hasText("#passes", "Passes 1–11", "done", "Pass 12", "7,400 of 16,000 records, 46%"),
		hasText("#datasets", "12 no end", "3 no end", "done 1 pass"),
		attrIs("#pass-progress", "data-pass", "12"),
	} {
		c(t, body, doc)
	}
	if len(find(doc, ".pass")) != 2 {
		t.Errorf("%d pass bars, want 2: the passes done and the current one", len(find(doc, ".pass")))
	}
}
