package taskqueue

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/trainmaster/master/go/wire"
)

func hundredRecords(int) int64 { return 100 }

func newOrderStore() *orderStore { return &orderStore{records: map[int]Record{}} }

// all returns the records the store holds.
func (s *orderStore) all() []Record {
	out := make([]Record, 0, len(s.records))
	for _, r := range s.records {
		out = append(out, r)
	}
	return out
}

func at(secs int) time.Time { return t0.Add(time.Duration(secs) * time.Second) }

// stragglerQueues returns 3 tasks of 100 records where "a" trained task 0
// in 10 s (0.1 s a record: the average, usable at once), "slow" holds task
// 1 since 10 s, and "a" trained task 2 from 10 to 20 s: Todo is empty and
// task 1 the only one pending. Every change is kept in store.
func stragglerQueues(t *testing.T, policy Stragglers, store *orderStore) *Queues {
	t.Helper()
	q, err := New(Config{MinSamples: 1, Window: 1, Timeout: time.Hour, Stragglers: policy}, 3, hundredRecords)
	if err != nil {
		t.Fatal(err)
	}
	step := func(ch Change, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		store.commit(ch)
	}
	task, epoch, ch, err := q.Dispatch(at(0), "a")
	step(ch, err)
	_, ch, err = q.Finish(task, 0, epoch, "", at(10))
	step(ch, err)
	for _, trainer := range []string{"slow", "a"} {
		_, _, ch, err = q.Dispatch(at(10), trainer)
		step(ch, err)
	}
	_, ch, err = q.Finish(2, 0, 1, "", at(20))
	step(ch, err)
	return q
}

// TestSplitStraggler: an idle trainer gets the rest of a dispatch that
// runs past 1.5 times its expected time, cut past where its holder will be
// when it learns; the holder learns its end in the answer to its next
// report, records past it count as the end, and the pass ends when the
// task's part and the piece are done, every record counted once.
func TestSplitStraggler(t *testing.T) {
	store := newOrderStore()
	q := stragglerQueues(t, StragglersSplit, store)
	rep, ch, err := q.Progress(1, 0, 1, 10, "slow", at(20)) // 1 record a second: 10 times slower
	if err != nil || rep.Report != wire.Recorded || rep.To != 0 {
		t.Fatalf("progress: %+v %v", rep, err)
	}
	store.commit(ch)
	if _, _, _, err := q.Dispatch(at(24), "b"); !errors.Is(err, ErrNoTask) {
		t.Fatalf("dispatch at 14 s of a 10 s task: %v, want ErrNoTask (not yet 1.5 times)", err)
	}

	// At 27 s: reached 17 by its rate; it reports next at about 30 s, by
	// when it may be at 26 (1.5 times 10 s at 1 a second, and one more);
	// finishing together at 1 and 10 records a second would cut at 25.
	piece, epoch, ch, relief, err := q.DispatchFor(at(27), "b", Finished{})
	if err != nil || piece != 3 || epoch != 1 {
		t.Fatalf("dispatch to an idle trainer: piece %d epoch %d, %v; want piece 3 epoch 1", piece, epoch, err)
	}
	store.commit(ch)
	if r := relief; r == nil || r.Kind != StragglersSplit || r.Task != 1 || r.Holder != "slow" || r.Reached != 10 || r.Cut != 26 {
		t.Fatalf("relief %+v", relief)
	}
	p := q.Entry(piece)
	if p.Of != 1 || p.From != 26 || p.To != 100 || p.Progress != 26 || p.Trainer != "b" || p.Queue != Pending {
		t.Fatalf("piece entry %+v", p)
	}
	if e := q.Entry(1); e.To != 26 || e.Epoch != 1 || e.Trainer != "slow" {
		t.Fatalf("straggler entry %+v", e)
	}
	if q.Pieces() != 1 || q.Count(Pending) != 2 {
		t.Fatalf("%d pieces, %d pending", q.Pieces(), q.Count(Pending))
	}
	if _, _, _, err := q.Dispatch(at(28), "c"); !errors.Is(err, ErrNoTask) {
		t.Fatalf("a second split before the holder learned the first: %v", err)
	}

	rep, ch, _ = q.Progress(1, 0, 1, 20, "slow", at(30))
	if rep.Report != wire.Recorded || rep.To != 26 {
		t.Fatalf("report after the split: %+v, want its new end 26", rep)
	}
	store.commit(ch)
	// Learned; but at 1 a second it would reach 36 before it learns
	// again: past its end, so no piece is cut.
	if _, _, _, err := q.Dispatch(at(31), "c"); !errors.Is(err, ErrNoTask) {
		t.Fatalf("a split past the end: %v", err)
	}
	rep, ch, _ = q.Progress(1, 0, 1, 30, "slow", at(41))
	if rep.To != 26 || q.Entry(1).Progress != 26 {
		t.Fatalf("report past the end: %+v, progress %d; want both 26", rep, q.Entry(1).Progress)
	}
	store.commit(ch)
	_, ch, err = q.Finish(1, 0, 1, "", at(42))
	if err != nil {
		t.Fatal(err)
	}
	store.commit(ch)
	if q.DoneRecords() != 226 {
		t.Fatalf("%d records done, want 226 (tasks 0 and 2, and 26 of task 1)", q.DoneRecords())
	}
	checkSplitRestored(t, q, store, piece)
}

// checkSplitRestored: a restore of TestSplitStraggler's store keeps the
// piece and the cut, and the pass ends with the piece.
func checkSplitRestored(t *testing.T, q *Queues, store *orderStore, piece int) {
	t.Helper()
	r, err := Restore(q.cfg, 3, hundredRecords, store.pass, Stored(store.all()), at(43))
	if err != nil {
		t.Fatal(err)
	}
	if p := r.Entry(3); r.Pieces() != 1 || p.Of != 1 || p.From != 26 || p.To != 100 || p.Trainer != "b" || r.Entry(1).Queue != Done || r.DoneRecords() != 226 {
		t.Fatalf("restored: %d pieces, piece %+v, %d records done", r.Pieces(), r.Entry(3), r.DoneRecords())
	}
	_, ch, err := r.Finish(piece, 0, 1, "", at(50))
	if err != nil || !ch.PassChanged || r.Pass() != 1 || r.Pieces() != 0 {
		t.Fatalf("finish of the piece: %+v %v; pass %d, %d pieces; want pass 1 without pieces", ch, err, r.Pass(), r.Pieces())
	}
	if e := r.Entry(1); e.To != 0 || r.Length(e) != 100 {
		t.Fatalf("task 1 in the next pass: %+v", e)
	}
	// A late report of the piece is of a pass that is over; the next
	// pass has no piece 3 yet.
	if rep, _, err := r.Finish(piece, 0, 1, "b", at(51)); rep != wire.StalePass || err != nil {
		t.Fatalf("finish of the piece after its pass: %v %v", rep, err)
	}
	if _, _, err := r.Finish(piece, 1, 1, "b", at(51)); !errors.Is(err, ErrBadReport) || !strings.Contains(err.Error(), "piece 3 does not exist") {
		t.Fatalf("finish of a piece not cut in this pass: %v", err)
	}
}

// TestBackUpStraggler: a straggler that reports no progress, or any with
// the backup policy, is dispatched again to the idle trainer; the first
// finish wins.
func TestBackUpStraggler(t *testing.T) {
	for _, tc := range []struct {
		name     string
		policy   Stragglers
		progress bool
	}{
		{"split policy, no progress", StragglersSplit, false},
		{"backup policy", StragglersBackup, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := stragglerQueues(t, tc.policy, newOrderStore())
			if tc.progress {
				if _, _, err := q.Progress(1, 0, 1, 10, "slow", at(20)); err != nil {
					t.Fatal(err)
				}
			}
			task, epoch, _, relief, err := q.DispatchFor(at(27), "b", Finished{})
			if err != nil || task != 1 || epoch != 2 || q.Pieces() != 0 {
				t.Fatalf("dispatch: task %d epoch %d, %v; want task 1 epoch 2", task, epoch, err)
			}
			if r := relief; r == nil || r.Kind != StragglersBackup || r.Holder != "slow" || r.Epoch != 1 {
				t.Fatalf("relief %+v", relief)
			}
			if e := q.Entry(1); e.Trainer != "b" || q.Holding("slow") != 0 {
				t.Fatalf("backed up entry %+v; slow holds %d", e, q.Holding("slow"))
			}
			if rep, _, _ := q.Progress(1, 0, 1, 20, "slow", at(30)); rep.Report != wire.Superseded {
				t.Fatalf("the first dispatch's report: %v, want superseded", rep.Report)
			}
			if rep, _, _ := q.Finish(1, 0, 1, "", at(31)); rep != wire.Recorded {
				t.Fatalf("first finish (the straggler's): %v", rep)
			}
			if rep, _, _ := q.Finish(1, 0, 2, "", at(32)); rep != wire.StalePass { // the first ended the pass
				t.Fatalf("second finish (the backup's): %v", rep)
			}
		})
	}
}

// TestNoRelief: nothing is relieved with the policy off, for an unnamed
// trainer, for the trainer's own straggler, while Todo has tasks, or past
// the bound of a pass.
func TestNoRelief(t *testing.T) {
	q := stragglerQueues(t, StragglersOff, newOrderStore())
	for _, trainer := range []string{"b", "", wire.Unnamed} {
		if _, _, _, err := q.Dispatch(at(100), trainer); !errors.Is(err, ErrNoTask) {
			t.Fatalf("policy off, trainer %q: %v", trainer, err)
		}
	}
	q = stragglerQueues(t, StragglersBackup, newOrderStore())
	for _, trainer := range []string{"", wire.Unnamed, "slow"} {
		if task, _, _, err := q.Dispatch(at(100), trainer); !errors.Is(err, ErrNoTask) {
			t.Fatalf("trainer %q: task %d, %v", trainer, task, err)
		}
	}
	// Bound: MaxPieces(3) = 3 reliefs a pass, each backing up the last.
	for i, trainer := range []string{"b", "c", "d", "e"} {
		_, epoch, _, err := q.Dispatch(at(200+100*i), trainer)
		if i < 3 && epoch != i+2 || i == 3 && !errors.Is(err, ErrNoTask) {
			t.Fatalf("relief %d: epoch %d, %v", i+1, epoch, err)
		}
	}

	q, err := New(Config{MinSamples: 1, Window: 1, Stragglers: StragglersBackup}, 3, hundredRecords)
	if err != nil {
		t.Fatal(err)
	}
	task, epoch, _, _ := q.Dispatch(at(0), "a")
	q.Finish(task, 0, epoch, "", at(10))
	q.Dispatch(at(10), "slow")
	q.Dispatch(at(10), "a")
	q.Expire(at(700)) // both back in Todo: a dispatch is no relief
	if task, epoch, _, relief, err := q.DispatchFor(at(701), "b", Finished{}); err != nil || relief != nil || epoch != 2 {
		t.Fatalf("dispatch with Todo not empty: task %d epoch %d %+v %v", task, epoch, relief, err)
	}
}

// TestRestoreRefusesMissingPiece: pieces are committed in order, so a gap
// among them is a damaged store.
func TestRestoreRefusesMissingPiece(t *testing.T) {
	piece := Entry{Queue: Pending, Epoch: 1, Of: 0, From: 5, To: 10, Progress: 5}
	_, err := Restore(Config{}, 3, tenRecords, 0, Stored([]Record{{Index: 4, Entry: piece}}), t0)
	if !errors.Is(err, ErrBadEntry) || !strings.Contains(err.Error(), "piece 3 of pass 0 is missing") {
		t.Fatalf("restore: %v", err)
	}
	piece.To = 11
	_, err = Restore(Config{}, 3, tenRecords, 0, Stored([]Record{{Index: 3, Entry: piece}}), t0)
	if !errors.Is(err, ErrBadEntry) || !strings.Contains(err.Error(), "past the 10 records of task 0") {
		t.Fatalf("restore: %v", err)
	}
}

func TestParseStragglers(t *testing.T) {
	for _, s := range []Stragglers{StragglersOff, StragglersSplit, StragglersBackup} {
		if got, err := ParseStragglers(s.String()); got != s || err != nil {
			t.Errorf("parse %q: %v %v", s, got, err)
		}
	}
	if _, err := ParseStragglers("sometimes"); err == nil || !strings.Contains(err.Error(), `"sometimes"`) {
		t.Errorf("parse sometimes: %v", err)
	}
}

// TestReporterIsLeftToReport: a started dispatch of a trainer that reports
// progress is not backed up before its first report: it is split after it.
func TestReporterIsLeftToReport(t *testing.T) {
	q := stragglerQueues(t, StragglersSplit, newOrderStore())
	if _, _, err := q.Progress(1, 0, 1, 10, "slow", at(20)); err != nil {
		t.Fatal(err)
	}
	if rep, _, err := q.Fail(1, 0, 1, "slow", "restarted"); rep != wire.Recorded || err != nil {
		t.Fatalf("fail: %v %v", rep, err)
	}
	if task, epoch, _, err := q.Dispatch(at(21), "slow"); task != 1 || epoch != 2 || err != nil {
		t.Fatalf("dispatch: task %d epoch %d %v", task, epoch, err)
	}
	if task, epoch, _, relief, err := q.DispatchFor(at(40), "b", Finished{}); !errors.Is(err, ErrNoTask) {
		t.Fatalf("relief before the reporter's first report: task %d epoch %d %+v %v", task, epoch, relief, err)
	}
	if _, _, err := q.Progress(1, 0, 2, 15, "slow", at(45)); err != nil {
		t.Fatal(err)
	}
	if _, _, _, relief, err := q.DispatchFor(at(46), "b", Finished{}); err != nil || relief == nil || relief.Kind != StragglersSplit {
		t.Fatalf("relief after it: %+v %v", relief, err)
	}
}

// TestSilentReporterIsBackedUp: a trainer that reports progress but has
// not for twice its interval (and a second) has stalled: its dispatch is
// backed up instead of waited for.
func TestSilentReporterIsBackedUp(t *testing.T) {
	q := stragglerQueues(t, StragglersSplit, newOrderStore())
	for _, r := range []struct{ done, at int }{{60, 22}, {70, 24}} { // every 2 s, 5 records a second
		if _, _, err := q.Progress(1, 0, 1, r.done, "slow", at(r.at)); err != nil {
			t.Fatal(err)
		}
	}
	// At 26 s it is split: it would reach 70 + 1.5 x 2 x 5 + 1 = 86 before
	// it learns, and at 5 and 10 records a second the two end together
	// at 86.7. At 30 s it is silent: 6 s since its last report, more than
	// 2 x 2 + 1. (The piece's trainer asks: its own piece is not relieved.)
	if _, _, _, relief, err := q.DispatchFor(at(26), "b", Finished{}); err != nil || relief == nil || relief.Kind != StragglersSplit || relief.Cut != 87 {
		t.Fatalf("relief at 26 s: %+v %v", relief, err)
	}
	if _, _, _, relief, err := q.DispatchFor(at(30), "b", Finished{}); err != nil || relief == nil || relief.Kind != StragglersBackup || relief.Task != 1 {
		t.Fatalf("relief at 30 s: %+v %v", relief, err)
	}
}
