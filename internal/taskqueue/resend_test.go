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
