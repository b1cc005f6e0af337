package taskqueue

import (
	"slices"
	"testing"
	"time"

	"github.com/trainmaster/master/go/wire"
)

// TestReliefDecision: the straggler policy's decisions, from the state
// alone. The base state: the average is 0.1 s a record, "b" asks at 27 s
// with Todo empty, and "slow" holds task 1 (100 records) since 10 s: 1.7
// times its expected 10 s.
func TestReliefDecision(t *testing.T) {
	slow := pendingDispatch{task: 1, epoch: 1, holder: "slow", dispatched: at(10), started: at(10), end: 100}
	reporting := slow // reported reaching 10 at 20 s: 1 record a second
	reporting.mark, reporting.interval = progressMark{done: 10, at: nanos(at(20))}, wire.DefaultProgressInterval
	backup := Relief{Kind: StragglersBackup, Task: 1, Epoch: 1, Holder: "slow", Overdue: 1.7}
	split := Relief{Kind: StragglersSplit, Task: 1, Epoch: 1, Holder: "slow", Overdue: 1.7, Reached: 10, Cut: 26}
	with := func(d pendingDispatch, edit func(*pendingDispatch)) pendingDispatch { edit(&d); return d }
	for _, tc := range []struct {
		name    string
		policy  Stragglers
		edit    func(st *reliefState) // of the base state
		now     int                   // seconds; 0: 27
		pending []pendingDispatch
		want    *Relief // nil: nothing
	}{
		{"off", StragglersOff, nil, 0, []pendingDispatch{slow}, nil},
		{"backup", StragglersBackup, nil, 0, []pendingDispatch{slow}, &backup},
		{"backup of a reporter", StragglersBackup, nil, 0, []pendingDispatch{reporting}, &backup},
		{"unnamed asker", StragglersBackup, func(st *reliefState) { st.asker = "" }, 0, []pendingDispatch{slow}, nil},
		{"asker of no name", StragglersBackup, func(st *reliefState) { st.asker = wire.Unnamed }, 0, []pendingDispatch{slow}, nil},
		{"the asker's own", StragglersBackup, func(st *reliefState) { st.asker = "slow" }, 0, []pendingDispatch{slow}, nil},
		{"todo not empty", StragglersBackup, func(st *reliefState) { st.todo = 1 }, 0, []pendingDispatch{slow}, nil},
		{"pass full", StragglersBackup, func(st *reliefState) { st.full = true }, 0, []pendingDispatch{slow}, nil},
		{"no average yet", StragglersBackup, func(st *reliefState) { st.averaged = false }, 0, []pendingDispatch{slow}, nil},
		{"not overdue enough", StragglersBackup, nil, 24, []pendingDispatch{slow}, nil},
		{"overdue, not StragglerMin", StragglersBackup, nil, 11, []pendingDispatch{with(slow, func(d *pendingDispatch) { d.end = 1 })}, nil},
		{"split a reporter", StragglersSplit, nil, 0, []pendingDispatch{reporting}, &split},
		{"split policy backs up a trainer that does not report", StragglersSplit, nil, 0, []pendingDispatch{slow}, &backup},
		{"split policy backs up a silent reporter", StragglersSplit, nil, 0,
			[]pendingDispatch{with(reporting, func(d *pendingDispatch) { d.interval = 2 * time.Second })}, &backup},
		{"reporter before its first report", StragglersSplit, nil, 0,
			[]pendingDispatch{with(slow, func(d *pendingDispatch) { d.interval = time.Minute })}, nil},
		{"reporter that has not learned its cut", StragglersSplit, nil, 0,
			[]pendingDispatch{with(reporting, func(d *pendingDispatch) { d.mark.cut = true })}, nil},
		{"reporter done before a piece would be", StragglersSplit, nil, 0,
			[]pendingDispatch{with(reporting, func(d *pendingDispatch) { d.end = 26 })}, nil},
		{"waiting behind its trainer's task: backed up", StragglersSplit, nil, 45,
			[]pendingDispatch{with(reporting, func(d *pendingDispatch) { d.depth = 1 })},
			&Relief{Kind: StragglersBackup, Task: 1, Epoch: 1, Holder: "slow", Overdue: 1.75}},
		{"the most overdue first", StragglersBackup, nil, 0,
			[]pendingDispatch{slow, with(slow, func(d *pendingDispatch) { d.task, d.started, d.dispatched = 2, at(5), at(5) })},
			&Relief{Kind: StragglersBackup, Task: 2, Epoch: 1, Holder: "slow", Overdue: 2.2}},
		{"equally overdue: the lower task", StragglersBackup, nil, 0,
			[]pendingDispatch{with(slow, func(d *pendingDispatch) { d.task = 2 }), slow}, &backup},
		{"past one that will report, to one to split", StragglersSplit, nil, 0,
			[]pendingDispatch{reporting, with(slow, func(d *pendingDispatch) {
				d.task, d.started, d.dispatched, d.interval = 2, at(5), at(5), time.Minute
			})}, &split},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := reliefState{asker: "b", averaged: true, mean: 0.1, pending: slices.Values(tc.pending)}
			if tc.edit != nil {
				tc.edit(&st)
			}
			now := at(cmpOr(tc.now, 27))
			got, ok := tc.policy.decide(now, st)
			if ok != (tc.want != nil) || ok && !reliefNear(got, *tc.want) {
				t.Fatalf("decided %+v %v, want %+v", got, ok, tc.want)
			}
		})
	}
}

// cmpOr returns v, or def when v is 0.
func cmpOr(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// reliefNear compares reliefs, their Overdue to a thousandth.
func reliefNear(a, b Relief) bool {
	d := a.Overdue - b.Overdue
	a.Overdue, b.Overdue = 0, 0
	return a == b && d < 1e-3 && d > -1e-3
}

// TestCutAt: where a reporter's rest is cut: past where it will be when
// it learns its end, no earlier than where it and a trainer at the
// average's rate would finish together, and nowhere once that is its end.
func TestCutAt(t *testing.T) {
	base := pendingDispatch{started: at(10), end: 100, mark: progressMark{done: 10, at: nanos(at(20))}}
	for _, tc := range []struct {
		name string
		edit func(d *pendingDispatch)
		mean float64
		now  int
		want int // 0: no cut
	}{
		{"reach, it reports every 10 s", nil, 0.1, 27, 26},
		{"reach from the report before", func(d *pendingDispatch) { d.mark.prev = nanos(at(18)) }, 0.01, 21, 14},
		{"together, at the report before", func(d *pendingDispatch) { d.mark.prev = nanos(at(18)) }, 0.1, 21, 20},
		{"together, the asker as slow as it", nil, 1, 27, 59},
		{"reach is past the end", func(d *pendingDispatch) { d.end = 26 }, 0.1, 27, 0},
		{"the end past an entry's 32 bits", func(d *pendingDispatch) { d.end = 1 << 40 }, 0.1, 27, 0},
		{"no records since its start: cut after its position", func(d *pendingDispatch) { d.mark.from = 10 }, 0.1, 27, 11},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := base
			if tc.edit != nil {
				tc.edit(&d)
			}
			cut, ok := cutAt(d, tc.mean, at(tc.now))
			if ok != (tc.want != 0) || cut != tc.want {
				t.Fatalf("cut %d %v, want %d", cut, ok, tc.want)
			}
		})
	}
}
