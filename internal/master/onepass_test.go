package master

import (
	"testing"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/taskqueue"
)

// TestGetTaskOnePass: a GetTask asking for a task of one pass is handed
// one while that pass is current; once it is over it is answered "pass
// over" and handed nothing, its finish recorded all the same; once every
// pass is over it is answered "all passes done".
func TestGetTaskOnePass(t *testing.T) {
	pattern := writeDataset(t, t.TempDir(), 1, 2)
	s, _ := newService(t, Config{ChunksPerTask: 1, Queue: taskqueue.Config{Passes: 2}})
	if err := s.ReportDataset(ctx, []string{pattern}); err != nil {
		t.Fatal(err)
	}
	a, err := s.GetTask(ctx, wire.Task{OnePass: true, Pass: 0})
	if err != nil || a.Pass != 0 {
		t.Fatalf("first task %+v %v", a, err)
	}
	b, err := s.GetTask(ctx, wire.Task{})
	if err != nil || b.Pass != 0 {
		t.Fatalf("second task %+v %v", b, err)
	}
	if _, err := s.TaskFinished(ctx, b); err != nil {
		t.Fatal(err)
	}
	// a's finish ends pass 0: the caller of pass 0 is told so, and handed
	// nothing of pass 1.
	a.OnePass = true
	if next, err := s.GetTask(ctx, a); !wire.Is(err, wire.TextPassOver) {
		t.Fatalf("GetTask for pass 0 once it is over: %+v %v, want %q", next, err, wire.TextPassOver)
	}
	if st := status(t, s); st.Pass != 1 || st.Pending != 0 || st.Todo != 2 {
		t.Fatalf("status %+v: want pass 1 begun, the finish recorded, nothing handed out", st)
	}
	if _, err := s.GetTask(ctx, wire.Task{OnePass: true, Pass: 0}); !wire.Is(err, wire.TextPassOver) {
		t.Fatalf("GetTask for pass 0 without a finish: %v", err)
	}
	var last []wire.Task
	for range 2 {
		c, err := s.GetTask(ctx, wire.Task{OnePass: true, Pass: 1})
		if err != nil || c.Pass != 1 {
			t.Fatalf("task of pass 1: %+v %v", c, err)
		}
		last = append(last, c)
	}
	for _, c := range last {
		if _, err := s.TaskFinished(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.GetTask(ctx, wire.Task{OnePass: true, Pass: 1}); !wire.Is(err, wire.TextAllDone) {
		t.Fatalf("GetTask for pass 1 once all are done: %v, want %q", err, wire.TextAllDone)
	}
}
