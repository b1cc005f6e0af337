package statusapi

import "testing"

// TestProgress: the share of the pass and of the job done, and the time
// left, for the states a dataset goes through.
func TestProgress(t *testing.T) {
	for _, tc := range []struct {
		name            string
		j               JobStatus
		percent, jobPct int
		share           float64
		passETA, jobETA float64 // -1: none
	}{
		{"not started", JobStatus{Records: 1000, Tasks: 10, Passes: 3}, 0, 0, 0, -1, -1},
		{"42% of pass 2 of 3", JobStatus{Records: 1000, RecordsDone: 420, Tasks: 10, Pass: 1, Passes: 3, RecordsPerSecond: 10},
			42, 47, 0.42, 58, 158},
		{"99.9% is 99", JobStatus{Records: 1000, RecordsDone: 999, Passes: 1, RecordsPerSecond: 1}, 99, 99, 0.999, 1, 1},
		{"a full last pass not yet done is 99", JobStatus{Records: 1000, RecordsDone: 1000, Pass: 2, Passes: 3}, 100, 99, 1, -1, -1},
		{"all done", JobStatus{Records: 1000, Pass: 3, Passes: 3, AllDone: true, RecordsPerSecond: 5}, 0, 100, 0, -1, -1},
		{"no records: tasks count", JobStatus{Done: 3, Tasks: 6, Passes: 2}, 50, 25, 0.5, -1, -1},
		{"nothing at all", JobStatus{RecordsDone: 1}, 0, 100, 0, -1, -1},
		{"without end: the pass's share, no job ETA", JobStatus{Records: 1000, RecordsDone: 420, Pass: 11, Endless: true, RecordsPerSecond: 10},
			42, 42, 0.42, 58, -1},
		{"without end, not started", JobStatus{Records: 1000, Pass: 3, Endless: true}, 0, 0, 0, -1, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := tc.j
			if got := j.Percent(); got != tc.percent {
				t.Errorf("Percent %d, want %d", got, tc.percent)
			}
			if got := j.JobPercent(); got != tc.jobPct {
				t.Errorf("JobPercent %d, want %d", got, tc.jobPct)
			}
			if got := j.Share(); got != tc.share {
				t.Errorf("Share %v, want %v", got, tc.share)
			}
			pass, job := j.ETAs()
			for _, eta := range []struct {
				name string
				got  *float64
				want float64
			}{{"pass", pass, tc.passETA}, {"job", job, tc.jobETA}} {
				switch {
				case eta.want < 0 && eta.got != nil:
					t.Errorf("%s ETA %v, want none", eta.name, *eta.got)
				case eta.want >= 0 && (eta.got == nil || *eta.got != eta.want):
					t.Errorf("%s ETA %v, want %v", eta.name, eta.got, eta.want)
				}
			}
		})
	}
}

// TestPassWords: the pass named from 1, with or without an end, and a
// number of passes in words.
func TestPassWords(t *testing.T) {
	for _, tc := range []struct {
		job  JobStatus
		want string
	}{
		{JobStatus{Pass: 2, Passes: 5}, "pass 3/5"},
		{JobStatus{Pass: 11, Endless: true}, "pass 12, no end"},
	} {
		if got := tc.job.PassText(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.job, got, tc.want)
		}
	}
	for n, want := range map[int]string{1: "1 pass", 2: "2 passes", 0: "0 passes"} {
		if got := PassCount(n); got != want {
			t.Errorf("PassCount(%d) = %q, want %q", n, got, want)
		}
	}
}
