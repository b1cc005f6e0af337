package masterbench

import (
	"testing"
	"time"
)

func TestScheduleSpreadsPhasesEvenly(t *testing.T) {
	start := time.Unix(1000, 0)
	for _, tc := range []struct {
		n      int
		period time.Duration
		want   []time.Duration
	}{
		{1, time.Second, []time.Duration{0}},
		{4, time.Second, []time.Duration{0, 250 * time.Millisecond, 500 * time.Millisecond, 750 * time.Millisecond}},
		{3, 5 * time.Second, []time.Duration{0, 5 * time.Second / 3, 2 * 5 * time.Second / 3}},
	} {
		for i, want := range tc.want {
			s := scheduleOf(i, tc.n, start, tc.period)
			if got := s.at(0).Sub(start); got != want {
				t.Errorf("%d trainers, trainer %d: phase %v, want %v", tc.n, i, got, want)
			}
			if got := s.at(2).Sub(s.at(1)); got != tc.period {
				t.Errorf("%d trainers, trainer %d: slots %v apart, want %v", tc.n, i, got, tc.period)
			}
		}
	}
	// 10,000 trainers over 5 s: 2,000 calls in every second, none in a burst.
	perSecond := map[int64]int{}
	for i := range 10000 {
		perSecond[int64(scheduleOf(i, 10000, start, 5*time.Second).at(0).Sub(start)/time.Second)]++
	}
	for sec := range int64(5) {
		if perSecond[sec] != 2000 {
			t.Errorf("second %d: %d first calls, want 2000", sec, perSecond[sec])
		}
	}
}

func TestScheduleNext(t *testing.T) {
	start := time.Unix(1000, 0)
	s := scheduleOf(1, 4, start, 4*time.Second) // slots at 1 s, 5 s, 9 s, 13 s...
	at := func(d time.Duration) time.Time { return start.Add(d) }
	for _, tc := range []struct {
		name     string
		k        int
		returned time.Time
		slot     int
		late     bool
	}{
		{"returned early", 0, at(1100 * time.Millisecond), 1, false},
		{"returned at the next slot", 0, at(5 * time.Second), 1, false},
		{"returned just after it", 0, at(5*time.Second + time.Millisecond), 1, true},
		// Slots at 5 s and 9 s passed: one call at once for the 9 s
		// slot, the next at 13 s.
		{"returned two slots late", 0, at(10 * time.Second), 2, true},
		{"late from a later slot", 3, at(22 * time.Second), 5, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			slot, late := s.next(tc.k, tc.returned)
			if slot != tc.slot || late != tc.late {
				t.Fatalf("next(%d, %v): slot %d late %v, want %d %v", tc.k, tc.returned.Sub(start), slot, late, tc.slot, tc.late)
			}
			if tc.late && !s.at(slot+1).After(tc.returned) {
				t.Fatalf("the call after the late one, at %v, is due already at %v", s.at(slot+1).Sub(start), tc.returned.Sub(start))
			}
		})
	}
}
