package taskqueue

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trainmaster/master/go/wire"
)

func dispatchTo(t *testing.T, q *Queues, now time.Time, trainer string) (int, Entry) {
	t.Helper()
	task, _, ch, err := q.Dispatch(now, trainer)
	if err != nil {
		t.Fatalf("dispatch to %q: %v", trainer, err)
	}
	if len(ch.Records) != 1 || ch.Records[0].Trainer != q.Entry(task).Trainer {
		t.Fatalf("dispatch change %+v", ch)
	}
	return task, q.Entry(task)
}

// TestDeadlineAllowsForPrefetch: a task handed to a trainer that still
// holds k tasks waits behind them, so its timeout is (1+k) times the task's.
// Trainers that send no name are not told apart and get the plain timeout.
func TestDeadlineAllowsForPrefetch(t *testing.T) {
	q := newQueues(t, Config{Timeout: time.Minute}, 6)
	for i, tc := range []struct {
		trainer string
		want    time.Duration
	}{
		{"a", time.Minute}, {"a", 2 * time.Minute}, {"a", 3 * time.Minute},
		{"b", time.Minute},
		{"", time.Minute}, {wire.Unnamed, time.Minute},
	} {
		task, e := dispatchTo(t, q, t0, tc.trainer)
		if got := e.Deadline.Sub(e.Dispatched); task != i || got != tc.want {
			t.Errorf("dispatch %d to %q: task %d, timeout %v, want task %d, %v", i, tc.trainer, task, got, i, tc.want)
		}
		if want := map[bool]string{true: tc.trainer, false: ""}[tracked(tc.trainer)]; e.Trainer != want {
			t.Errorf("dispatch %d to %q: entry names %q", i, tc.trainer, e.Trainer)
		}
	}
	if h := q.Holders(); h["a"] != 3 || h["b"] != 1 || len(h) != 2 {
		t.Fatalf("holders %v", h)
	}
}

// TestAverageCountsFromTrainerStart: a prefetched task is counted from the
// finish of the task its trainer held before it, not from its dispatch.
func TestAverageCountsFromTrainerStart(t *testing.T) {
	for _, tc := range []struct {
		trainer string
		want    time.Duration // 10 records a task: factor 1 x mean s/record x 10
	}{
		{"a", 10 * time.Second},          // samples 10 s and 10 s
		{wire.Unnamed, 15 * time.Second}, // 10 s and 20 s: prefetch unseen
	} {
		q := newQueues(t, Config{Timeout: time.Hour, TimeoutMin: time.Second, Factor: 1, MinSamples: 2, Window: 2}, 3)
		dispatchTo(t, q, t0, tc.trainer)
		dispatchTo(t, q, t0, tc.trainer)
		for task, at := range []time.Duration{10 * time.Second, 20 * time.Second} {
			if _, _, err := q.Finish(task, 0, 1, "", t0.Add(at)); err != nil {
				t.Fatal(err)
			}
		}
		if got := q.Timeout(2); got != tc.want {
			t.Errorf("trainer %q: timeout %v, want %v", tc.trainer, got, tc.want)
		}
	}
}

// TestTimedOutTaskGoesToAnotherTrainer: the trainer a task timed out with
// is passed over for Reassign; another trainer gets it; after Reassign the
// first may have it again.
func TestTimedOutTaskGoesToAnotherTrainer(t *testing.T) {
	q := newQueues(t, Config{Timeout: time.Minute, Reassign: 5 * time.Second}, 2)
	dispatchTo(t, q, t0, "slow")
	expiry := t0.Add(time.Minute)
	if exp, _ := q.Expire(expiry); !slices.Equal(exp, []int{0}) {
		t.Fatalf("expired %v", exp)
	}
	if task, _ := dispatchTo(t, q, expiry, "slow"); task != 1 {
		t.Fatalf("slow got task %d after its timeout, want 1 (0 waits for another trainer)", task)
	}
	if _, _, _, err := q.Dispatch(expiry.Add(time.Second), "slow"); !errors.Is(err, ErrNoTask) {
		t.Fatalf("slow asked again within Reassign: %v, want no task", err)
	}
	if task, e := dispatchTo(t, q, expiry.Add(time.Second), "fast"); task != 0 || e.Epoch != 2 {
		t.Fatalf("fast got task %d epoch %d, want 0 epoch 2", task, e.Epoch)
	}

	q = newQueues(t, Config{Timeout: time.Minute, Reassign: 5 * time.Second}, 1)
	dispatchTo(t, q, t0, "slow")
	q.Expire(expiry)
	if _, _, _, err := q.Dispatch(expiry.Add(4*time.Second), "slow"); !errors.Is(err, ErrNoTask) {
		t.Fatalf("within Reassign: %v, want no task", err)
	}
	if task, _ := dispatchTo(t, q, expiry.Add(5*time.Second), "slow"); task != 0 {
		t.Fatalf("after Reassign slow got %d", task)
	}
}

// TestReleaseLostTrainer: a lost trainer's tasks go to the front of Todo,
// lowest first, without counting as timeouts, and the order and holders
// survive a restore from the stored entries.
func TestReleaseLostTrainer(t *testing.T) {
	q := newQueues(t, Config{Timeout: time.Minute, MaxTimeouts: 1}, 6)
	var stored []Record
	keep := func(ch Change) {
		stored = slices.DeleteFunc(stored, func(r Record) bool {
			return slices.ContainsFunc(ch.Records, func(n Record) bool { return n.Index == r.Index })
		})
		stored = append(stored, ch.Records...)
	}
	for _, trainer := range []string{"a", "b", "a"} { // tasks 0, 1, 2
		_, _, ch, err := q.Dispatch(t0, trainer)
		if err != nil {
			t.Fatal(err)
		}
		keep(ch)
	}
	if released, ch := q.Release(wire.Unnamed); released != nil || !ch.Empty() {
		t.Fatalf("released %v for an unnamed trainer", released)
	}
	released, ch := q.Release("a")
	keep(ch)
	if !slices.Equal(released, []int{0, 2}) || len(ch.Records) != 2 {
		t.Fatalf("released %v, change %+v", released, ch)
	}
	for _, r := range ch.Records {
		if r.Queue != Todo || r.Timeouts != 0 || r.Trainer != "" || !strings.Contains(r.Error, "trainer a lost") || r.Seq >= 0 {
			t.Fatalf("released entry %+v", r)
		}
	}
	if h := q.Holders(); h["a"] != 0 || h["b"] != 1 {
		t.Fatalf("holders after release: %v", h)
	}
	r, err := Restore(q.cfg, 6, tenRecords, 0, Stored(stored), t0)
	if err != nil {
		t.Fatal(err)
	}
	for name, qq := range map[string]*Queues{"live": q, "restored": r} {
		if h := qq.Holders(); h["b"] != 1 || len(h) != 1 {
			t.Fatalf("%s: holders %v", name, h)
		}
		var order []int
		for range 5 {
			task, _ := dispatchTo(t, qq, t0, "c")
			order = append(order, task)
		}
		if want := []int{0, 2, 3, 4, 5}; !slices.Equal(order, want) {
			t.Errorf("%s: dispatch order %v, want %v", name, order, want)
		}
	}
}

// TestTightenedDeadlinesAreStored: when the average becomes usable the
// pending tasks' shorter deadlines are part of the change, so that the
// store (and master inspect) has what the master applies.
func TestTightenedDeadlinesAreStored(t *testing.T) {
	q := newQueues(t, Config{Timeout: time.Hour, TimeoutMin: time.Second, Factor: 1, MinSamples: 1}, 3)
	dispatchTo(t, q, t0, "a")
	dispatchTo(t, q, t0, "b")
	dispatchTo(t, q, t0, "b")
	_, ch, err := q.Finish(0, 0, 1, "", t0.Add(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]time.Time{1: t0.Add(10 * time.Second), 2: t0.Add(20 * time.Second)} // depth 0 and 1
	if len(ch.Records) != 3 || ch.Records[0].Index != 0 {
		t.Fatalf("change %+v", ch.Records)
	}
	for _, r := range ch.Records[1:] {
		if r.Queue != Pending || !r.Deadline.Equal(want[r.Index]) || !q.Entry(r.Index).Deadline.Equal(want[r.Index]) {
			t.Errorf("task %d: stored deadline %v, entry %v, want %v", r.Index, r.Deadline, q.Entry(r.Index).Deadline, want[r.Index])
		}
	}
}

func TestCheckRecordTrainer(t *testing.T) {
	ok := Record{Index: 0, Entry: Entry{Queue: Pending, Epoch: 1, Trainer: "a"}}
	if err := CheckRecord(ok, 1); err != nil {
		t.Fatal(err)
	}
	for _, r := range []Record{
		{Index: 0, Entry: Entry{Queue: Done, Epoch: 1, Trainer: "a"}},
		{Index: 0, Entry: Entry{Queue: Pending, Epoch: 1, Trainer: strings.Repeat("x", wire.MaxTrainerNameBytes+1)}},
		{Index: 0, Entry: Entry{Queue: Todo, Epoch: 1, Seq: minSeq - 1}},
	} {
		if err := CheckRecord(r, 1); !errors.Is(err, ErrBadEntry) {
			t.Errorf("%+v: %v", r.Entry, err)
		}
	}
}

// TestRestoredTasksAreNotSamples: a task pending when the queues were
// restored is not a sample of the average (its dispatch time is the
// restore's); once real samples make the average usable, it gets the
// adaptive timeout from the restore like any pending task.
func TestRestoredTasksAreNotSamples(t *testing.T) {
	cfg := Config{Timeout: time.Hour, TimeoutMin: time.Second, Factor: 1, MinSamples: 1}
	q := newQueues(t, cfg, 4)
	var stored []Record
	for range 2 {
		task, _, ch, _ := q.Dispatch(t0, "a")
		stored = append(stored, Record{Index: task, Entry: ch.Records[0].Entry})
	}
	restart := t0.Add(time.Minute)
	r, err := Restore(q.cfg, 4, tenRecords, 0, Stored(stored), restart)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.Finish(0, 0, 1, "", restart.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if got := r.Timeout(2); got != time.Hour {
		t.Fatalf("a restored task's finish was taken as a sample: timeout %v", got)
	}
	task, epoch, _, _ := r.Dispatch(restart, "b")
	_, ch, _ := r.Finish(task, 0, epoch, "", restart.Add(10*time.Second))
	if got := r.Timeout(3); got != 10*time.Second || len(ch.Records) != 2 || ch.Records[1].Index != 1 {
		t.Fatalf("timeout %v after a real sample; change %+v (want the restored task 1 tightened)", got, ch.Records)
	}
	if e := r.Entry(1); !e.Deadline.Equal(restart.Add(10 * time.Second)) {
		t.Fatalf("restored task's deadline %v", e.Deadline)
	}
}

// TestHoldersApply: an entry's change moves its task from the old holder
// to the new one, counts what each trainer holds, tracks named trainers
// only, and ends the wait of a task kept from a trainer once dispatched.
func TestHoldersApply(t *testing.T) {
	pending := func(trainer string) Entry { return Entry{Queue: Pending, Epoch: 1, Trainer: trainer} }
	for _, tc := range []struct {
		name      string
		held      map[int]string // pending before, task -> trainer
		old, e    Entry          // task 1's change
		byTask    map[int]string
		byTrainer map[string]int
		kept      bool // task 1 still kept from "a" (it was before the change)
	}{
		{"dispatch", nil, Entry{Queue: Todo}, pending("a"), map[int]string{1: "a"}, map[string]int{"a": 1}, false},
		{"dispatch beside another", map[int]string{2: "a"}, Entry{Queue: Todo}, pending("a"), map[int]string{1: "a", 2: "a"}, map[string]int{"a": 2}, false},
		{"dispatch to no name", nil, Entry{Queue: Todo}, pending(""), map[int]string{}, map[string]int{}, false},
		{"dispatch to wire.Unnamed", nil, Entry{Queue: Todo}, pending(wire.Unnamed), map[int]string{}, map[string]int{}, false},
		{"finish", map[int]string{1: "a"}, pending("a"), Entry{Queue: Done}, map[int]string{}, map[string]int{}, true},
		{"finish of one of two", map[int]string{1: "a", 2: "a"}, pending("a"), Entry{Queue: Done}, map[int]string{2: "a"}, map[string]int{"a": 1}, true},
		{"timeout", map[int]string{1: "a"}, pending("a"), Entry{Queue: Todo, Timeouts: 1}, map[int]string{}, map[string]int{}, true},
		{"backup by another", map[int]string{1: "a"}, pending("a"), pending("b"), map[int]string{1: "b"}, map[string]int{"b": 1}, false},
		{"progress of the same dispatch", map[int]string{1: "a"}, pending("a"), Entry{Queue: Pending, Epoch: 1, Trainer: "a", Progress: 5}, map[int]string{1: "a"}, map[string]int{"a": 1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHolders()
			for task, trainer := range tc.held {
				p := pending(trainer)
				h.apply(task, &Entry{Queue: Todo}, &p)
			}
			h.keepFrom(1, "a", at(10))
			h.apply(1, &tc.old, &tc.e)
			counts := map[string]int{}
			for name, held := range h.byTrainer {
				counts[name] = held.tasks
			}
			if !maps.Equal(h.byTask, tc.byTask) || !maps.Equal(counts, tc.byTrainer) || h.keeps(1, "a", at(9)) != tc.kept {
				t.Fatalf("holders %v, holding %v, task 1 kept from a: %v", h.byTask, counts, h.keeps(1, "a", at(9)))
			}
			e := Entry{Queue: tc.e.Queue}
			h.fill(1, &e)
			if want := tc.byTask[1]; e.Trainer != want {
				t.Fatalf("filled trainer %q, want %q", e.Trainer, want)
			}
			h.startPass()
			if len(h.byTask)+len(h.byTrainer)+len(h.avoid) != 0 {
				t.Fatalf("a new pass keeps %v %v %v", h.byTask, h.byTrainer, h.avoid)
			}
		})
	}
}

// TestProgressKeepsTheHoldersStart: a trainer finishes the task it held
// while a prefetched one waited, then reports progress on the latter, now
// the only task it holds: the waiting task still counts from that finish
// (the report changed the same dispatch, not its holder), as the timeouts'
// samples and the straggler policy read it.
func TestProgressKeepsTheHoldersStart(t *testing.T) {
	q := newQueues(t, Config{Timeout: time.Hour}, 2)
	first, e1 := dispatchTo(t, q, t0, "a")
	second, _ := dispatchTo(t, q, t0, "a")
	if rep, _, err := q.Finish(first, 0, e1.Epoch, "a", at(10)); rep != wire.Recorded || err != nil {
		t.Fatalf("finish: %v %v", rep, err)
	}
	if got := q.holders.started(q.Entry(second)); !got.Equal(at(10)) {
		t.Fatalf("before the report the waiting task started at %v, want %v", got, at(10))
	}
	if rep, _, err := q.Progress(second, 0, 1, 5, "a", at(12)); rep.Report != wire.Recorded || err != nil {
		t.Fatalf("progress: %v %v", rep.Report, err)
	}
	if got := q.holders.started(q.Entry(second)); !got.Equal(at(10)) {
		t.Errorf("after the report the waiting task started at %v, want %v (its holder's finish)", got, at(10))
	}
}
