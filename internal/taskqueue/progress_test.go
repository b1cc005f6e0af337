package taskqueue

import (
	"errors"
	"testing"
	"time"

	"github.com/trainmaster/master/go/wire"
)

// TestProgress: the current dispatch's reports move the task's position
// forward, at most once per wire.MinProgressInterval; the position survives
// a timeout and a restore and is where the next dispatch starts; it is
// dropped once the task is done and at the next pass.
func TestProgress(t *testing.T) {
	q := newQueues(t, Config{Timeout: time.Minute, Passes: 2}, 2)
	task, epoch := dispatch(t, q, t0)
	sec := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Second) }
	for i, tc := range []struct {
		pass, epoch, done int
		at                time.Time
		want              wire.Report
		progress          int
		wantErr           error
	}{
		{0, 1, 4, sec(1), wire.Recorded, 4, nil},
		{0, 1, 5, sec(1).Add(time.Second / 4), wire.Recorded, 5, nil}, // two may come close
		{0, 1, 6, sec(1).Add(time.Second / 2), wire.TooSoon, 5, nil},  // not three
		{0, 1, 3, sec(3), wire.Recorded, 5, nil},                      // backwards: nothing changes
		{0, 1, 11, sec(5), 0, 5, ErrBadReport},                        // past the task's 10 records
		{0, 1, -1, sec(5), 0, 5, ErrBadReport},
		{0, 2, 5, sec(5), 0, 5, ErrFutureEpoch},
		{1, 1, 5, sec(5), 0, 5, ErrFuturePass},
		{0, 1, 7, sec(6), wire.Recorded, 7, nil},
	} {
		rep, ch, err := q.Progress(task, tc.pass, tc.epoch, tc.done, "", tc.at)
		if rep.Report != tc.want || !errors.Is(err, tc.wantErr) || q.Entry(task).Progress != tc.progress {
			t.Fatalf("report %d: %v, %v, progress %d; want %v, %v, %d", i, rep, err, q.Entry(task).Progress, tc.want, tc.wantErr, tc.progress)
		}
		if changed := !ch.Empty(); changed != (i == 0 || i == 1 || i == 8) {
			t.Fatalf("report %d changed %v: %+v", i, changed, ch)
		}
	}
	q.Expire(t0.Add(time.Minute))
	if rep, _, _ := q.Progress(task, 0, epoch, 9, "", sec(70)); rep.Report != wire.Superseded {
		t.Fatalf("progress of a timed out dispatch: %v", rep)
	}
	stored := []Record{{Index: task, Entry: q.Entry(task)}}
	r, err := Restore(q.cfg, 2, tenRecords, 0, Stored(stored), sec(80))
	if err != nil {
		t.Fatal(err)
	}
	for name, qq := range map[string]*Queues{"live": q, "restored": r} {
		if e := qq.Entry(task); e.Progress != 7 || e.Queue != Todo {
			t.Fatalf("%s: %+v", name, e)
		}
	}
	task2, _, _, _ := r.Dispatch(sec(80), "")
	if task2 != 1 { // task 1 first: task 0 went to the end of todo
		t.Fatalf("dispatched %d", task2)
	}
	again, e2, _, _ := r.Dispatch(sec(80), "")
	if again != task || r.Entry(task).Progress != 7 {
		t.Fatalf("dispatch %d epoch %d: progress %d", again, e2, r.Entry(task).Progress)
	}
	if rep, _, _ := r.Progress(task, 0, e2, 8, "", sec(80)); rep.Report != wire.Recorded { // the first report after a restore is never too soon
		t.Fatalf("first report after restore: %v", rep)
	}
	_, ch, _ := r.Finish(task, 0, e2, "", sec(81))
	if r.Entry(task).Progress != 0 || ch.Records[0].Progress != 0 {
		t.Fatalf("done task keeps progress %d", r.Entry(task).Progress)
	}
}

// TestResumedDispatchSamplesItsRest: a dispatch that started at a task's
// progress trained only the rest of it; the moving average divides its
// time by those records, not the task's (which would make it short, and
// time out the tasks of trainers still training them).
func TestResumedDispatchSamplesItsRest(t *testing.T) {
	q := newQueues(t, Config{Timeout: time.Hour, TimeoutMin: time.Second, Factor: 1, MinSamples: 1}, 2)
	task, epoch := dispatch(t, q, t0)
	if rep, _, err := q.Progress(task, 0, epoch, 8, "", t0.Add(time.Second)); rep.Report != wire.Recorded || err != nil {
		t.Fatalf("progress: %v %v", rep, err)
	}
	if _, _, err := q.Fail(task, 0, epoch, "", "the trainer's disk"); err != nil {
		t.Fatal(err)
	}
	dispatch(t, q, t0) // task 1
	again, epoch2 := dispatch(t, q, t0)
	if again != task || q.Entry(task).Progress != 8 {
		t.Fatalf("dispatched %d, progress %d", again, q.Entry(task).Progress)
	}
	if _, _, err := q.Finish(task, 0, epoch2, "", t0.Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	if got := q.Timeout(1); got != 10*time.Second { // 2 s for 2 records: 1 s a record, 10 records
		t.Fatalf("timeout %v, want 10s", got)
	}
}

// TestProgressKeepsTheDispatchMemory: a progress report rewrites a pending
// task's entry; the dispatch keeps its depth and, after a restore, stays
// no sample of the average.
func TestProgressKeepsTheDispatchMemory(t *testing.T) {
	cfg := Config{Timeout: time.Hour, TimeoutMin: time.Second, Factor: 1, MinSamples: 1}
	q := newQueues(t, cfg, 3)
	_, _, ch, _ := q.Dispatch(t0, "a")
	r, err := Restore(q.cfg, 3, tenRecords, 0, Stored(ch.Records), t0)
	if err != nil {
		t.Fatal(err)
	}
	if rep, _, _ := r.Progress(0, 0, 1, 5, "a", t0.Add(time.Second)); rep.Report != wire.Recorded {
		t.Fatalf("progress: %v", rep)
	}
	if _, _, err := r.Finish(0, 0, 1, "", t0.Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	if got := r.Timeout(1); got != time.Hour {
		t.Fatalf("a restored dispatch became a sample after a progress report: timeout %v", got)
	}
	r.Dispatch(t0, "b")
	_, epoch, _, _ := r.Dispatch(t0, "b") // depth 1
	if rep, _, _ := r.Progress(2, 0, epoch, 5, "b", t0.Add(time.Second)); rep.Report != wire.Recorded {
		t.Fatalf("progress: %v", rep)
	}
	if d := r.entries[2].depth; d != 1 {
		t.Fatalf("depth %d after a progress report, want 1", d)
	}
}

// TestProgressApply: a task has a mark while it has progress and is not
// Done; a new position drops the report times of the old one, the same
// position keeps them.
func TestProgressApply(t *testing.T) {
	reported := progressMark{done: 5, from: 2, at: 7, prev: 3}
	for _, tc := range []struct {
		name   string
		before *progressMark // task 1's mark; nil: none
		e      Entry
		want   *progressMark
	}{
		{"first progress", nil, Entry{Queue: Pending, Progress: 5}, &progressMark{done: 5}},
		{"no progress", nil, Entry{Queue: Pending}, nil},
		{"the same position", &reported, Entry{Queue: Pending, Progress: 5}, &reported},
		{"the same position, back in Todo", &reported, Entry{Queue: Todo, Progress: 5}, &reported},
		{"a new position", &reported, Entry{Queue: Pending, Progress: 8}, &progressMark{done: 8}},
		{"done", &reported, Entry{Queue: Done}, nil},
		{"done, progress left in the entry", &reported, Entry{Queue: Done, Progress: 5}, nil},
		{"failed", &reported, Entry{Queue: Failed, Progress: 5}, &reported},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newProgress()
			if tc.before != nil {
				p.marks[1] = *tc.before
			}
			p.apply(1, &Entry{}, &tc.e)
			got, ok := p.marks[1]
			if ok != (tc.want != nil) || ok && got != *tc.want || len(p.marks) > 1 {
				t.Fatalf("marks %v, want task 1's %+v", p.marks, tc.want)
			}
			var e Entry
			p.fill(1, &e)
			if e.Progress != got.done {
				t.Fatalf("filled progress %d, want %d", e.Progress, got.done)
			}
			p.reported("a", time.Second, &holders{})
			p.startPass()
			if len(p.marks) != 0 || p.interval("a") != time.Second {
				t.Fatalf("a new pass keeps marks %v, forgets the reporters %v", p.marks, p.reporters)
			}
		})
	}
}

// TestProgressOnlyFromTheHolder: a task's position moves only by the
// reports of its current dispatch's holder, as Entry.Trainer names it (""
// for an unnamed one, which any caller that sends no name reports for);
// anyone else is answered superseded and moves nothing: a stranger, the
// holder of a dispatch backed up or of the task a piece was cut from, and
// after a restore too.
func TestProgressOnlyFromTheHolder(t *testing.T) {
	type report struct {
		trainer           string
		task, epoch, done int
		want              wire.Report
		progress          int // the task's position after the report
	}
	held := func(trainer string) func(t *testing.T) *Queues {
		return func(t *testing.T) *Queues {
			q := newQueues(t, Config{Timeout: time.Hour}, 2)
			dispatchTo(t, q, t0, trainer)
			return q
		}
	}
	for _, tc := range []struct {
		name    string
		queues  func(t *testing.T) *Queues
		reports []report
	}{
		{"named holder", held("holder"), []report{
			{"stranger", 0, 1, 10, wire.Superseded, 0},
			{"", 0, 1, 10, wire.Superseded, 0},
			{wire.Unnamed, 0, 1, 10, wire.Superseded, 0},
			{"holder", 0, 1, 3, wire.Recorded, 3},
			{"stranger", 0, 1, 9, wire.Superseded, 3},
		}},
		{"unnamed holder", held(""), []report{
			{"", 0, 1, 2, wire.Recorded, 2},
			{wire.Unnamed, 0, 1, 4, wire.Recorded, 4},
			{"stranger", 0, 1, 9, wire.Superseded, 4},
		}},
		{"restored", func(t *testing.T) *Queues {
			q := held("holder")(t)
			r, err := Restore(q.cfg, 2, tenRecords, 0, Stored(q.Tasks(Pending)), t0)
			if err != nil {
				t.Fatal(err)
			}
			return r
		}, []report{
			{"stranger", 0, 1, 10, wire.Superseded, 0},
			{"holder", 0, 1, 5, wire.Recorded, 5},
		}},
		{"backed up", func(t *testing.T) *Queues {
			q := stragglerQueues(t, StragglersBackup, newOrderStore())
			if task, epoch, _, _, err := q.DispatchFor(at(27), "b", Finished{}); task != 1 || epoch != 2 || err != nil {
				t.Fatalf("backup: task %d epoch %d %v", task, epoch, err)
			}
			return q
		}, []report{
			{"slow", 1, 1, 20, wire.Superseded, 0},
			{"slow", 1, 2, 20, wire.Superseded, 0},
			{"c", 1, 2, 20, wire.Superseded, 0},
			{"b", 1, 2, 20, wire.Recorded, 20},
		}},
		{"split", func(t *testing.T) *Queues {
			q := stragglerQueues(t, StragglersSplit, newOrderStore())
			if _, _, err := q.Progress(1, 0, 1, 10, "slow", at(20)); err != nil {
				t.Fatal(err)
			}
			if piece, _, _, relief, err := q.DispatchFor(at(27), "b", Finished{}); piece != 3 || relief == nil || relief.Cut != 26 || err != nil {
				t.Fatalf("split: piece %d %+v %v", piece, relief, err)
			}
			return q
		}, []report{
			{"slow", 3, 1, 30, wire.Superseded, 26},
			{"b", 1, 1, 20, wire.Superseded, 10},
			{"b", 3, 1, 30, wire.Recorded, 30},
			{"slow", 1, 1, 20, wire.Recorded, 20},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := tc.queues(t)
			for i, r := range tc.reports {
				rep, ch, err := q.Progress(r.task, 0, r.epoch, r.done, r.trainer, at(30+i))
				if err != nil || rep.Report != r.want || q.Entry(r.task).Progress != r.progress || ch.Empty() != (r.want != wire.Recorded) {
					t.Fatalf("report %d (%q, task %d epoch %d at %d): %v %v, changed %v, position %d; want %v, position %d",
						i, r.trainer, r.task, r.epoch, r.done, rep.Report, err, !ch.Empty(), q.Entry(r.task).Progress, r.want, r.progress)
				}
			}
		})
	}
}

// TestStrangersProgressLosesNoRecords (issue 23): a stranger reports the
// end of a named trainer's task; the holder reports 3 and fails the task;
// the next dispatch starts at 3, not past records nobody trained.
func TestStrangersProgressLosesNoRecords(t *testing.T) {
	q := newQueues(t, Config{Timeout: time.Hour}, 1)
	task, e := dispatchTo(t, q, t0, "holder")
	if rep, _, _ := q.Progress(task, 0, e.Epoch, 10, "stranger", at(1)); rep.Report != wire.Superseded {
		t.Fatalf("the stranger's report: %v, want superseded", rep.Report)
	}
	if rep, _, _ := q.Progress(task, 0, e.Epoch, 3, "holder", at(2)); rep.Report != wire.Recorded {
		t.Fatalf("the holder's report: %v", rep.Report)
	}
	if rep, _, err := q.Fail(task, 0, e.Epoch, "holder", "the trainer's disk"); rep != wire.Recorded || err != nil {
		t.Fatalf("fail: %v %v", rep, err)
	}
	if again, e2 := dispatchTo(t, q, at(3), "other"); again != task || e2.Progress != 3 {
		t.Fatalf("dispatched again: task %d from %d, want task %d from 3", again, e2.Progress, task)
	}
}

// TestStrangersProgressIsNoSignOfLife: reports refused for a dispatch do
// not make its silent holder look like a trainer that reports progress:
// the straggler policy backs it up rather than wait for it or split it.
func TestStrangersProgressIsNoSignOfLife(t *testing.T) {
	q := stragglerQueues(t, StragglersSplit, newOrderStore())
	for i, done := range []int{10, 15, 20} {
		if rep, _, _ := q.Progress(1, 0, 1, done, "b", at(20+2*i)); rep.Report != wire.Superseded {
			t.Fatalf("the stranger's report %d: %v, want superseded", i, rep.Report)
		}
	}
	if q.progress.interval("slow") != 0 || q.progress.mark(1).at != 0 {
		t.Fatalf("the holder looks alive: interval %v, mark %+v", q.progress.interval("slow"), q.progress.mark(1))
	}
	if _, _, _, relief, err := q.DispatchFor(at(27), "b", Finished{}); err != nil || relief == nil || relief.Kind != StragglersBackup || relief.Task != 1 {
		t.Fatalf("relief: %+v %v, want task 1 backed up", relief, err)
	}
}

// TestFailOnlyFromTheHolder (issue 23): a failure report from anyone but
// the holder of the task's current dispatch is superseded and changes
// nothing, so a stranger cannot send a task back, nor have it discarded by
// failing it again and again; the holder's own report is recorded.
func TestFailOnlyFromTheHolder(t *testing.T) {
	for _, tc := range []struct {
		name, holder, reporter string
		want                   wire.Report
	}{
		{"the holder", "holder", "holder", wire.Recorded},
		{"a stranger", "holder", "stranger", wire.Superseded},
		{"an unnamed caller for a named holder", "holder", "", wire.Superseded},
		{"a named caller for an unnamed holder", "", "stranger", wire.Superseded},
		{"an unnamed caller for an unnamed holder", "", wire.Unnamed, wire.Recorded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := newQueues(t, Config{Timeout: time.Hour, MaxTimeouts: 1}, 1)
			task, e := dispatchTo(t, q, t0, tc.holder)
			for range 3 {
				rep, ch, err := q.Fail(task, 0, e.Epoch, tc.reporter, "no")
				if err != nil || rep != tc.want || ch.Empty() != (rep != wire.Recorded) {
					t.Fatalf("fail from %q: %v %v, changed %v; want %v", tc.reporter, rep, err, !ch.Empty(), tc.want)
				}
				if rep == wire.Recorded {
					return
				}
			}
			if got := q.Entry(task); got.Queue != Pending || got.Timeouts != 0 {
				t.Errorf("after the stranger's failures the task is %v with %d timeouts, want pending with none", got.Queue, got.Timeouts)
			}
		})
	}
}
