package taskqueue

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/trainmaster/master/go/wire"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// tenRecords gives every task 10 records.
func tenRecords(int) int64 { return 10 }

func newQueues(t *testing.T, cfg Config, n int) *Queues {
	t.Helper()
	q, err := New(cfg, n, tenRecords)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func dispatch(t *testing.T, q *Queues, now time.Time) (int, int) {
	t.Helper()
	task, epoch, ch, err := q.Dispatch(now, "")
	if err != nil {
		t.Fatalf("dispatch: %v", err)
	}
	if len(ch.Records) != 1 || ch.Records[0].Index != task || ch.Records[0].Queue != Pending {
		t.Fatalf("dispatch change %+v", ch)
	}
	return task, epoch
}

func counts(q *Queues) [4]int {
	return [4]int{q.Count(Todo), q.Count(Pending), q.Count(Done), q.Count(Failed)}
}

func TestDispatchOrderAndEpochs(t *testing.T) {
	q := newQueues(t, Config{}, 3)
	for want := range 3 {
		task, epoch := dispatch(t, q, t0)
		if task != want || epoch != 1 {
			t.Fatalf("dispatched task %d epoch %d, want task %d epoch 1", task, epoch, want)
		}
	}
	if _, _, _, err := q.Dispatch(t0, ""); !errors.Is(err, ErrNoTask) {
		t.Fatalf("fourth dispatch: %v, want no task", err)
	}
	if c := counts(q); c != [4]int{0, 3, 0, 0} {
		t.Fatalf("counts %v", c)
	}
	if _, _, err := q.Finish(2, 0, 1, "", t0); err != nil || q.DoneRecords() != 10 {
		t.Fatalf("finish: %v, %d records done, want 10", err, q.DoneRecords())
	}
	// Task 1 fails and comes back at the end of Todo with epoch 2.
	q.Fail(1, 0, 1, "", "boom")
	task, epoch := dispatch(t, q, t0)
	if task != 1 || epoch != 2 {
		t.Fatalf("redispatch: task %d epoch %d", task, epoch)
	}
}

// step is one report of TestReports and what it is to do.
type step struct {
	op          string // "finish" or "fail"
	task, epoch int
	pass        int
	want        wire.Report
	wantErr     error
	wantQueue   Queue
}

// check makes the report i of a test on q and checks what it did.
func (s step) check(t *testing.T, q *Queues, i int) {
	t.Helper()
	before := counts(q)
	var rep wire.Report
	var ch Change
	var err error
	if s.op == "finish" {
		rep, ch, err = q.Finish(s.task, s.pass, s.epoch, "", t0.Add(time.Second))
	} else {
		rep, ch, err = q.Fail(s.task, s.pass, s.epoch, "", "broken block")
	}
	if !errors.Is(err, s.wantErr) || rep != s.want {
		t.Fatalf("step %d: report %v error %v, want %v %v", i, rep, err, s.want, s.wantErr)
	}
	if (rep == wire.Recorded) == ch.Empty() {
		t.Fatalf("step %d: report %v with change %+v", i, rep, ch)
	}
	if rep != wire.Recorded && counts(q) != before {
		t.Fatalf("step %d: a report that records nothing changed counts %v to %v", i, before, counts(q))
	}
	if s.task >= 0 && s.task < 3 {
		if got := q.Entry(s.task).Queue; got != s.wantQueue {
			t.Fatalf("step %d: task %d in %v, want %v", i, s.task, got, s.wantQueue)
		}
	}
}

func TestReports(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(q *Queues) // starts with tasks 0 and 1 dispatched once, task 2 in Todo
		steps []step
	}{
		{"finish current", nil, []step{{"finish", 0, 1, 0, wire.Recorded, nil, Done}}},
		{"duplicate finish", nil, []step{
			{"finish", 0, 1, 0, wire.Recorded, nil, Done},
			{"finish", 0, 1, 0, wire.AlreadyDone, nil, Done},
		}},
		{"finish of an older epoch while pending again", func(q *Queues) {
			q.Fail(0, 0, 1, "", "x")
			q.Dispatch(t0, "") // task 2
			q.Dispatch(t0, "") // task 0, epoch 2
		}, []step{
			{"finish", 0, 1, 0, wire.Recorded, nil, Done},
			{"finish", 0, 2, 0, wire.AlreadyDone, nil, Done},
		}},
		{"finish after timeout, back in todo", func(q *Queues) { q.Expire(t0.Add(time.Hour)) }, []step{
			{"finish", 1, 1, 0, wire.Recorded, nil, Done},
		}},
		{"unknown task", nil, []step{{"finish", 7, 1, 0, 0, ErrBadReport, Todo}}},
		{"negative task", nil, []step{{"fail", -1, 1, 0, 0, ErrBadReport, Todo}}},
		{"epoch zero", nil, []step{{"finish", 0, 0, 0, 0, ErrBadReport, Pending}}},
		{"epoch from the future", nil, []step{{"finish", 0, 2, 0, 0, ErrFutureEpoch, Pending}}},
		{"never dispatched", nil, []step{{"finish", 2, 1, 0, 0, ErrFutureEpoch, Todo}}},
		{"future pass", nil, []step{{"finish", 0, 1, 1, 0, ErrFuturePass, Pending}}},
		{"fail current", nil, []step{{"fail", 0, 1, 0, wire.Recorded, nil, Todo}}},
		{"fail twice", nil, []step{
			{"fail", 0, 1, 0, wire.Recorded, nil, Todo},
			{"fail", 0, 1, 0, wire.Superseded, nil, Todo},
		}},
		{"fail of a done task", nil, []step{
			{"finish", 0, 1, 0, wire.Recorded, nil, Done},
			{"fail", 0, 1, 0, wire.AlreadyDone, nil, Done},
		}},
		{"fail of an older epoch", func(q *Queues) {
			q.Fail(0, 0, 1, "", "x")
			q.Dispatch(t0, "")
			q.Dispatch(t0, "")
		}, []step{{"fail", 0, 1, 0, wire.Superseded, nil, Pending}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := newQueues(t, Config{Passes: 2}, 3)
			dispatch(t, q, t0)
			dispatch(t, q, t0)
			if tc.setup != nil {
				tc.setup(q)
			}
			for i, s := range tc.steps {
				s.check(t, q, i)
			}
		})
	}
}

func TestStalePassReport(t *testing.T) {
	q := newQueues(t, Config{Passes: 2}, 1)
	task, epoch := dispatch(t, q, t0)
	if rep, ch, err := q.Finish(task, 0, epoch, "", t0); rep != wire.Recorded || !ch.PassChanged || ch.Pass != 1 || err != nil {
		t.Fatalf("finish of the only task: %v %+v %v", rep, ch, err)
	}
	for _, op := range []func() (wire.Report, Change, error){
		func() (wire.Report, Change, error) { return q.Finish(task, 0, epoch, "", t0) },
		func() (wire.Report, Change, error) { return q.Fail(task, 0, epoch, "", "late") },
	} {
		if rep, ch, err := op(); rep != wire.StalePass || !ch.Empty() || err != nil {
			t.Fatalf("report for pass 0 in pass 1: %v %+v %v", rep, ch, err)
		}
	}
	if q.Entry(task).Queue != Todo || q.Pass() != 1 {
		t.Fatalf("task in %v, pass %d", q.Entry(task).Queue, q.Pass())
	}
}

// TestPassEnds drives a pass to its end by each way a last task can leave.
func TestPassEnds(t *testing.T) {
	for _, tc := range []struct {
		name string
		last func(q *Queues, task, epoch int) Change
	}{
		{"by finish", func(q *Queues, task, epoch int) Change {
			_, ch, _ := q.Finish(task, 0, epoch, "", t0)
			return ch
		}},
		{"by failure past the limit", func(q *Queues, task, epoch int) Change {
			_, ch, _ := q.Fail(task, 0, epoch, "", "bad block")
			return ch
		}},
		{"by discard after timeouts", func(q *Queues, task, epoch int) Change {
			_, ch := q.Expire(t0.Add(24 * time.Hour))
			return ch
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := newQueues(t, Config{Passes: 2, MaxTimeouts: 1}, 2)
			a, ea := dispatch(t, q, t0)
			if _, _, err := q.Finish(a, 0, ea, "", t0); err != nil {
				t.Fatal(err)
			}
			b, eb := dispatch(t, q, t0)
			if tc.name != "by finish" { // use up the one retry first
				q.Fail(b, 0, eb, "", "first failure")
				b, eb = dispatch(t, q, t0)
			}
			ch := tc.last(q, b, eb)
			if !ch.PassChanged || ch.Pass != 1 || q.Pass() != 1 {
				t.Fatalf("change %+v, pass %d: the pass did not end", ch, q.Pass())
			}
			if c := counts(q); c != [4]int{2, 0, 0, 0} {
				t.Fatalf("pass 1 starts with counts %v, want everything in todo", c)
			}
			if e := q.Entry(b); e.Timeouts != 0 || e.Epoch != 0 || e.Queue != Todo {
				t.Fatalf("failed task enters pass 1 as %+v, want reset", e)
			}
			// Pass 1 runs to the end: all passes done.
			for range 2 {
				task, epoch := dispatch(t, q, t0)
				if _, _, err := q.Finish(task, 1, epoch, "", t0); err != nil {
					t.Fatal(err)
				}
			}
			if _, _, _, err := q.Dispatch(t0, ""); !errors.Is(err, ErrAllDone) || !q.AllDone() {
				t.Fatalf("after the last pass: %v", err)
			}
		})
	}
}

func TestPendingWithoutTodoIsNoTask(t *testing.T) {
	q := newQueues(t, Config{}, 1)
	dispatch(t, q, t0)
	if _, _, _, err := q.Dispatch(t0, ""); !errors.Is(err, ErrNoTask) {
		t.Fatalf("%v, want no task available", err)
	}
}

func TestTimeoutsAndDiscard(t *testing.T) {
	q := newQueues(t, Config{Timeout: time.Minute, TimeoutMin: time.Second, MaxTimeouts: 2}, 2)
	task, _ := dispatch(t, q, t0)
	other, epoch := dispatch(t, q, t0)
	if _, _, err := q.Finish(other, 0, epoch, "", t0.Add(time.Minute)); err != nil { // too late to be a sample that matters
		t.Fatal(err)
	}
	if d, ok := q.NextDeadline(); !ok || !d.Equal(t0.Add(time.Minute)) {
		t.Fatalf("deadline %v %v, want the full timeout before any sample", d, ok)
	}
	if exp, ch := q.Expire(t0.Add(time.Minute - 1)); len(exp) != 0 || !ch.Empty() {
		t.Fatalf("expired %v early", exp)
	}
	now := t0
	for attempt := 1; attempt <= 3; attempt++ {
		now = now.Add(time.Minute)
		exp, ch := q.Expire(now)
		if len(exp) != 1 || exp[0] != task || len(ch.Records) != 1 {
			t.Fatalf("attempt %d: expired %v, change %+v", attempt, exp, ch)
		}
		e := ch.Records[0].Entry
		if e.Timeouts != attempt {
			t.Fatalf("attempt %d: %d timeouts counted", attempt, e.Timeouts)
		}
		if attempt <= 2 {
			if e.Queue != Todo {
				t.Fatalf("attempt %d: task in %v, want todo", attempt, e.Queue)
			}
			if got, _ := dispatch(t, q, now); got != task {
				t.Fatalf("attempt %d: task %d not redispatched", attempt, task)
			}
			continue
		}
		if e.Queue != Failed || e.Error == "" || !ch.PassChanged {
			t.Fatalf("after %d timeouts task is %+v (pass changed: %v), want failed with a reason, ending the pass", attempt, e, ch.PassChanged)
		}
	}
}

func TestFailedListing(t *testing.T) {
	q := newQueues(t, Config{MaxTimeouts: 1}, 2)
	task, epoch := dispatch(t, q, t0)
	dispatch(t, q, t0) // task 1 stays pending, so the pass goes on
	q.Fail(task, 0, epoch, "", "first")
	task, epoch = dispatch(t, q, t0)
	if rep, _, _ := q.Fail(task, 0, epoch, "", "unreadable block"); rep != wire.Recorded {
		t.Fatalf("report %v", rep)
	}
	got := q.Tasks(Failed)
	if len(got) != 1 || got[0].Index != task || got[0].Timeouts != 2 || got[0].Error != "dispatch 2 failed: unreadable block" {
		t.Fatalf("failed tasks %+v", got)
	}
}

func TestMovingAverageTimeout(t *testing.T) {
	sizes := func(task int) int64 { return []int64{100, 100, 100, 100, 10}[task] }
	q, err := New(Config{Timeout: 10 * time.Minute, TimeoutMin: time.Second, Factor: 3, MinSamples: 2, Window: 2}, 5, sizes)
	if err != nil {
		t.Fatal(err)
	}
	// Three finishes of 100 records: 10 s, 20 s, 40 s. The window of 2 keeps
	// the last two: 0.3 s per record on average.
	now := t0
	for i, took := range []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second} {
		if i < 2 && q.Timeout(4) != 10*time.Minute {
			t.Fatalf("timeout %v before enough samples, want the maximum", q.Timeout(4))
		}
		task, epoch := dispatch(t, q, now)
		now = now.Add(took)
		if _, _, err := q.Finish(task, 0, epoch, "", now); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		task int
		want time.Duration
	}{
		{3, 90 * time.Second}, // 3 × 0.3 s × 100
		{4, 9 * time.Second},  // 3 × 0.3 s × 10: the small last task is not penalised
	} {
		if got := q.Timeout(tc.task); got != tc.want {
			t.Errorf("task %d: timeout %v, want %v", tc.task, got, tc.want)
		}
	}
	task, _ := dispatch(t, q, now)
	if d, _ := q.NextDeadline(); !d.Equal(now.Add(90 * time.Second)) {
		t.Fatalf("task %d dispatched with deadline %v, want %v", task, d.Sub(now), 90*time.Second)
	}
}

func TestTimeoutClamps(t *testing.T) {
	for _, tc := range []struct {
		took time.Duration
		want time.Duration
	}{
		{time.Millisecond, 5 * time.Second}, // up to the minimum
		{time.Hour, time.Minute},            // down to the maximum
	} {
		q, _ := New(Config{Timeout: time.Minute, TimeoutMin: 5 * time.Second, MinSamples: 1, Window: 1}, 2, tenRecords)
		task, epoch := dispatch(t, q, t0)
		q.Finish(task, 0, epoch, "", t0.Add(tc.took))
		if got := q.Timeout(1); got != tc.want {
			t.Errorf("after a dispatch of %v: timeout %v, want %v", tc.took, got, tc.want)
		}
	}
}

func TestRestore(t *testing.T) {
	cfg := Config{Passes: 3, Timeout: time.Minute, TimeoutMin: time.Second}
	q := newQueues(t, cfg, 5)
	var stored = map[int]Record{}
	pass := 0
	keep := func(ch Change) {
		for _, r := range ch.Records {
			stored[r.Index] = r
		}
		pass = ch.Pass
	}
	// Pass 0 ends; in pass 1 task 0 is done, 1 pending, 2 timed out and back in Todo.
	for range 5 {
		task, epoch, ch, _ := q.Dispatch(t0, "")
		keep(ch)
		_, ch, _ = q.Finish(task, 0, epoch, "", t0)
		keep(ch)
	}
	for range 3 {
		_, _, ch, _ := q.Dispatch(t0, "")
		keep(ch)
	}
	_, ch, _ := q.Finish(0, 1, 1, "", t0)
	keep(ch)
	_, ch, _ = q.Fail(2, 1, 1, "", "flaky")
	keep(ch)

	var records []Record
	for _, r := range stored {
		records = append(records, r)
	}
	later := t0.Add(time.Hour)
	r, err := Restore(cfg, 5, tenRecords, pass, Stored(records), later)
	if err != nil {
		t.Fatal(err)
	}
	if r.Pass() != 1 || counts(r) != counts(q) || counts(r) != [4]int{3, 1, 1, 0} {
		t.Fatalf("restored pass %d counts %v, want pass 1 counts %v", r.Pass(), counts(r), counts(q))
	}
	if d, ok := r.NextDeadline(); !ok || !d.Equal(later.Add(time.Second)) {
		t.Fatalf("restored deadline %v %v, want its stored one, passed, put off to the minimum timeout from the restore", d, ok)
	}
	for i := range records {
		if records[i].Queue == Pending {
			records[i].Deadline = t0.Add(time.Minute)
		}
	}
	soon := t0.Add(30 * time.Second) // before that deadline
	if r, err := Restore(cfg, 5, tenRecords, pass, Stored(records), soon); err != nil {
		t.Fatal(err)
	} else if d, _ := r.NextDeadline(); !d.Equal(t0.Add(time.Minute)) {
		t.Fatalf("restored at %v: deadline %v, want the stored one", soon, d)
	}
	// Todo order survives: 3, 4 (never dispatched this pass), then 2 (requeued).
	for _, want := range []int{3, 4, 2} {
		if task, _ := dispatch(t, r, t0); task != want {
			t.Fatalf("restored queue dispatched %d, want %d", task, want)
		}
	}
	// A job restarted with fewer passes than it already ran is over.
	if r, err := Restore(cfg, 5, tenRecords, 4, nil, t0); err != nil || !r.AllDone() || r.Pass() != 3 {
		t.Fatalf("stored pass 4 of 3: %v; want all done at pass 3", err)
	}
}

// TestRestoreRefusesBadEntries: every entry is checked against the dataset
// and the package's own invariants; the first bad one is refused by task.
func TestRestoreRefusesBadEntries(t *testing.T) {
	ok := Entry{Pass: 0, Queue: Pending, Epoch: 2, Timeouts: 1, Seq: 7}
	for _, tc := range []struct {
		name string
		edit func(r *Record)
		want string
	}{
		{"task past the pieces", func(r *Record) { r.Index = 10 }, "task 10: the dataset has 5 tasks, and a pass at most 5 pieces"},
		{"piece without bounds", func(r *Record) { r.Index = 5 }, "task 5: a piece from 0 to 0"},
		{"piece of no task", func(r *Record) { r.Index, r.Of, r.From, r.To = 5, 7, 1, 2 }, "task 5: a piece of task 7"},
		{"piece progress outside it", func(r *Record) { r.Index, r.Queue, r.Of, r.From, r.To, r.Progress = 5, Pending, 1, 3, 6, 2 }, "progress 2 outside the piece's 3 to 6"},
		{"task with a piece's start", func(r *Record) { r.From = 3 }, "with the bounds of a piece"},
		{"task progress past its cut", func(r *Record) { r.Queue, r.To, r.Progress = Pending, 3, 4 }, "end 3 with progress 4"},
		{"negative task", func(r *Record) { r.Index = -1 }, "task -1: the dataset has 5 tasks"},
		{"negative epoch", func(r *Record) { r.Epoch = -3 }, "epoch -3"},
		{"epoch zero", func(r *Record) { r.Epoch = 0 }, "epoch 0"},
		{"epoch past 32 bits", func(r *Record) { r.Epoch = 1 << 40 }, "epoch 1099511627776"},
		{"more timeouts than dispatches", func(r *Record) { r.Timeouts = 3 }, "3 timeouts in 2 dispatches"},
		{"negative timeouts", func(r *Record) { r.Timeouts = -1 }, "-1 timeouts"},
		{"unknown queue", func(r *Record) { r.Queue = 9 }, "unknown queue 9"},
		{"seq below the front", func(r *Record) { r.Seq = minSeq - 1 }, "todo order -4611686018427387905"},
		{"trainer of a done task", func(r *Record) { r.Queue, r.Trainer = Done, "a" }, `trainer "a" named in queue done`},
		{"negative pass", func(r *Record) { r.Pass = -1 }, "pass -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Record{Index: 1, Entry: ok}
			tc.edit(&r)
			_, err := Restore(Config{}, 5, tenRecords, 0, Stored([]Record{{Index: 0, Entry: ok}, r}), t0)
			if !errors.Is(err, ErrBadEntry) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("restore: %v; want ErrBadEntry saying %q", err, tc.want)
			}
		})
	}
	failing := func(yield func(Record, error) bool) { yield(Record{}, errors.New("read failed")) }
	if _, err := Restore(Config{}, 5, tenRecords, 0, failing, t0); err == nil || err.Error() != "read failed" {
		t.Fatalf("restore from a failing source: %v", err)
	}
}

// TestFailureReasonIsBounded: a reason of any length is kept cut to
// wire.MaxErrorBytes, at a UTF-8 boundary, saying how long it was.
func TestFailureReasonIsBounded(t *testing.T) {
	for _, n := range []int{0, wire.MaxErrorBytes, wire.MaxErrorBytes + 1, 800 << 10} {
		q := newQueues(t, Config{}, 1)
		task, epoch := dispatch(t, q, t0)
		reason := strings.Repeat("é", n/2) + strings.Repeat("x", n%2)
		_, ch, err := q.Fail(task, 0, epoch, "", reason)
		if err != nil {
			t.Fatal(err)
		}
		got := ch.Records[0].Error
		if len(got) > wire.MaxErrorBytes+100 || !utf8.ValidString(got) {
			t.Fatalf("reason of %d bytes kept as %d bytes (valid UTF-8: %v)", n, len(got), utf8.ValidString(got))
		}
		if cut := n > wire.MaxErrorBytes; cut != strings.Contains(got, fmt.Sprintf("(%d bytes, cut to %d)", n, wire.MaxErrorBytes)) {
			t.Fatalf("reason of %d bytes kept as %q", n, got[max(0, len(got)-60):])
		}
		if q.Entry(task).Error != got {
			t.Fatal("the queues keep another reason than the change carries")
		}
	}
}

func TestConfigErrors(t *testing.T) {
	for _, cfg := range []Config{
		{Passes: -1},
		{Timeout: time.Second, TimeoutMin: time.Minute},
		{Factor: -1},
		{MinSamples: 30, Window: 5},
	} {
		if _, err := New(cfg, 1, tenRecords); err == nil {
			t.Errorf("config %+v accepted", cfg)
		}
	}
	if _, err := New(Config{}, 0, tenRecords); err == nil {
		t.Error("zero tasks accepted")
	}
}

// TestFirstWaveGetsTheAdaptiveTimeout: tasks dispatched before the average
// is known have their deadline brought forward once it is.
func TestFirstWaveGetsTheAdaptiveTimeout(t *testing.T) {
	q := newQueues(t, Config{Timeout: 10 * time.Minute, TimeoutMin: time.Second, MinSamples: 2, Window: 4}, 4)
	stalled, _ := dispatch(t, q, t0)
	for i := range 2 {
		task, epoch := dispatch(t, q, t0)
		if _, _, err := q.Finish(task, 0, epoch, "", t0.Add(time.Duration(i+1)*2*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	// 2 s and 4 s for 10 records: 0.3 s per record, so 3 × 0.3 × 10 = 9 s.
	if d := q.Entry(stalled).Deadline; !d.Equal(t0.Add(9 * time.Second)) {
		t.Fatalf("first-wave deadline %v after dispatch, want 9s", d.Sub(t0))
	}
	if exp, _ := q.Expire(t0.Add(9 * time.Second)); len(exp) != 1 || exp[0] != stalled {
		t.Fatalf("expired %v at 9 s, want the stalled task %d", exp, stalled)
	}
}

// TestMergedChangesRestoreTheSameQueues: committing a merged change leaves
// the store as committing its parts in order would, through a pass end.
func TestMergedChangesRestoreTheSameQueues(t *testing.T) {
	q := newQueues(t, Config{Passes: 3, MaxTimeouts: 1}, 3)
	var changes []Change
	keep := func(ch Change) { changes = append(changes, ch) }
	for range 2 { // two passes, with a failure, a retry and a timeout
		a, ea, ch, _ := q.Dispatch(t0, "")
		keep(ch)
		b, eb, ch, _ := q.Dispatch(t0, "")
		keep(ch)
		_, ch, _ = q.Fail(a, q.Pass(), ea, "", "bad block")
		keep(ch)
		_, ch, _ = q.Finish(b, q.Pass(), eb, "", t0)
		keep(ch)
		for pass := q.Pass(); q.Pass() == pass; {
			task, epoch, ch, err := q.Dispatch(t0, "")
			if err != nil {
				t.Fatal(err)
			}
			keep(ch)
			_, ch, _ = q.Finish(task, pass, epoch, "", t0)
			keep(ch)
		}
	}
	_, _, ch, _ := q.Dispatch(t0, "")
	keep(ch)
	_, ch = q.Expire(t0.Add(time.Hour))
	keep(ch)

	apply := func(store map[int]Entry, ch Change) int {
		for _, r := range ch.Records {
			store[r.Index] = r.Entry
		}
		return ch.Pass
	}
	one, merged := map[int]Entry{}, map[int]Entry{}
	var onePass int
	var all Change
	for _, ch := range changes {
		onePass = apply(one, ch)
		all = all.Merge(ch)
	}
	mergedPass := apply(merged, all)
	if !all.PassChanged || mergedPass != onePass || onePass != 2 {
		t.Fatalf("merged pass %d (changed %v), one by one %d", mergedPass, all.PassChanged, onePass)
	}
	if len(all.Records) != 3 {
		t.Fatalf("merged change has %d records for 3 tasks", len(all.Records))
	}
	for task, e := range one {
		if merged[task] != e {
			t.Errorf("task %d: merged %+v, one by one %+v", task, merged[task], e)
		}
	}
}

// TestMergeOfNothingKeepsThePass: merging an empty change (an operation
// that changed nothing, its Pass unset) keeps the pass a change ended.
func TestMergeOfNothingKeepsThePass(t *testing.T) {
	ended := Change{Pass: 2, PassChanged: true, Records: []Record{{Index: 0, Entry: Entry{Pass: 1, Queue: Done, Epoch: 1}}}}
	if got := ended.Merge(Change{}); got.Pass != 2 || !got.PassChanged || len(got.Records) != 1 {
		t.Fatalf("merged %+v", got)
	}
}
