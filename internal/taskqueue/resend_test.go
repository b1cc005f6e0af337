package taskqueue

import (
	"testing"
	"time"
)

// TestResend: a dispatch remembers the finish it answered while it is
// pending with its trainer; an unnamed trainer, another trainer, or a
// dispatch that moved on (finished, timed out) are not resent.
func TestResend(t *testing.T) {
	q := newQueues(t, Config{Timeout: time.Minute}, 4)
	f := Finished{Task: 9, Epoch: 1, Pass: 0}
	task, epoch, _, _, err := q.DispatchFor(t0, "a", f)
	if err != nil {
		t.Fatal(err)
	}
	if got, e, ok := q.Resend("a", f); !ok || got != task || e != epoch {
		t.Fatalf("resend to a: %d %d %v, want task %d epoch %d", got, e, ok, task, epoch)
	}
	if _, _, ok := q.Resend("b", f); ok {
		t.Fatal("resent to another trainer")
	}
	if _, _, ok := q.Resend("a", Finished{Task: 9, Epoch: 2}); ok {
		t.Fatal("resent for another finish")
	}
	if _, _, _, _, err := q.DispatchFor(t0, "", f); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := q.Resend("", f); ok {
		t.Fatal("resent to an unnamed trainer")
	}
	q.Expire(t0.Add(2 * time.Minute)) // a's dispatch timed out: back in todo, no longer a's
	if _, _, ok := q.Resend("a", f); ok || q.Entry(task).For != (Finished{}) {
		t.Fatalf("resent after a timeout; entry %+v", q.Entry(task))
	}
}

// TestResendsApply: a task keeps the finish its dispatch answered while
// it is pending, and only then.
func TestResendsApply(t *testing.T) {
	f, g := Finished{Task: 9, Epoch: 1}, Finished{Task: 8, Epoch: 2, Pass: 1}
	for _, tc := range []struct {
		name   string
		before Finished // task 1's; zero: none
		e      Entry
		want   Finished
	}{
		{"a dispatch for a finish", Finished{}, Entry{Queue: Pending, For: f}, f},
		{"a dispatch for none", f, Entry{Queue: Pending}, Finished{}},
		{"a dispatch for another", f, Entry{Queue: Pending, For: g}, g},
		{"done", f, Entry{Queue: Done, For: f}, Finished{}},
		{"back in Todo", f, Entry{Queue: Todo, For: f}, Finished{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newResends()
			if tc.before != (Finished{}) {
				r.apply(1, &Entry{}, &Entry{Queue: Pending, For: tc.before})
			}
			r.apply(1, &Entry{}, &tc.e)
			if got, ok := r.answers[1]; got != tc.want || ok != (tc.want != Finished{}) {
				t.Fatalf("answers %v, want task 1's %+v", r.answers, tc.want)
			}
			e := Entry{Queue: tc.e.Queue}
			r.fill(1, &e)
			if e.For != tc.want {
				t.Fatalf("filled %+v, want %+v", e.For, tc.want)
			}
			r.startPass()
			if len(r.answers) != 0 {
				t.Fatalf("a new pass keeps %v", r.answers)
			}
		})
	}
}
