package statusapi

import (
	"fmt"
	"math"
)

// progress is what the share of the pass done counts: its records, or its
// tasks when it has no records.
func (j *JobStatus) progress() (done, all int64) {
	if j.Records <= 0 {
		return int64(j.Done), int64(j.Tasks)
	}
	return j.RecordsDone, j.Records
}

// Percent is the share of this pass done in whole percents, rounded down:
// 100 only once all of it is. It counts records, or tasks without records.
func (j *JobStatus) Percent() int {
	done, all := j.progress()
	if all <= 0 {
		return 0
	}
	return int(min(max(100*done/all, 0), 100))
}

// Share is the share of this pass done, from 0 to 1: Percent unrounded.
func (j *JobStatus) Share() float64 {
	done, all := j.progress()
	if all <= 0 {
		return 0
	}
	return min(max(float64(done)/float64(all), 0), 1)
}

// JobPercent is the share of the passes started done, in whole percents
// rounded down: at most 99 until all passes are done. Without end, it is
// the current pass's (Percent).
func (j *JobStatus) JobPercent() int {
	if j.Endless {
		return j.Percent()
	}
	if j.AllDone || j.Passes <= 0 {
		return 100
	}
	return int(math.Min(99, math.Floor(100*(float64(j.Pass)+j.Share())/float64(j.Passes))))
}

// ETAs returns the seconds left to the end of this pass and of the last
// pass at RecordsPerSecond: nil while no rate is known, and once all
// passes are done; the last pass's is nil without end.
func (j *JobStatus) ETAs() (pass, job *float64) {
	if j.RecordsPerSecond <= 0 || j.AllDone {
		return nil, nil
	}
	p := float64(j.Records-j.RecordsDone) / j.RecordsPerSecond
	if j.Endless {
		return &p, nil
	}
	all := p + float64(j.Passes-j.Pass-1)*float64(j.Records)/j.RecordsPerSecond
	return &p, &all
}

// PassText names the current pass of j, from 1: "pass 3/5", or without end
// "pass 12, no end".
func (j *JobStatus) PassText() string {
	if j.Endless {
		return fmt.Sprintf("pass %d, no end", j.Pass+1)
	}
	return fmt.Sprintf("pass %d/%d", j.Pass+1, j.Passes)
}

// PassCount is n passes in words: "1 pass", "2 passes".
func PassCount(n int) string {
	if n == 1 {
		return "1 pass"
	}
	return fmt.Sprintf("%d passes", n)
}
