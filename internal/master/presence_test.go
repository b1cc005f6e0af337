package master

import (
	"maps"
	"net/rpc"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/taskqueue"
	"github.com/trainmaster/master/internal/trainerport"
	"github.com/trainmaster/master/internal/trainerport/porttest"
)

// graceRunning reports whether trainer's grace runs.
func graceRunning(svc *Service, trainer string) bool {
	s := train(svc)
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.pres.gone[trainer]
	return ok
}

// awaitGrace waits until the server has told s that trainer's last
// connection ended (it learns it when its read of the connection fails).
func awaitGrace(t *testing.T, s *Service, trainer string, running bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); graceRunning(s, trainer) != running; {
		if time.Now().After(deadline) {
			t.Fatalf("grace of %q running: %v, want %v", trainer, !running, running)
		}
		time.Sleep(time.Millisecond)
	}
}

// dialTrainer is a trainer of the given name on a connection of its own.
func dialTrainer(t *testing.T, addr, name string) *porttest.Trainer {
	t.Helper()
	rc, err := rpc.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return porttest.NewTrainer(t, name, rc)
}

func pendingOf(svc *Service) map[int]string {
	s := train(svc)
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[int]string{}
	for _, r := range s.q.Tasks(taskqueue.Pending) {
		out[r.Index] = r.Trainer
	}
	return out
}

// TestLostTrainerTasksBackAtOnce: the tasks of a trainer whose connection
// closed go back to the front of Todo once its grace has passed, without
// counting as timeouts, and before their own timeout; the other trainers
// keep theirs.
func TestLostTrainerTasksBackAtOnce(t *testing.T) {
	pattern := writeDataset(t, t.TempDir(), 1, 6)
	obs := &recordingObserver{}
	s, clock := newService(t, Config{ChunksPerTask: 1, TrainerGrace: 5 * time.Second, Queue: taskqueue.Config{Timeout: time.Hour}, Observer: obs})
	if err := s.ReportDataset(ctx, []string{pattern}); err != nil {
		t.Fatal(err)
	}
	p := startPort(t, s, trainerport.Config{})
	a, b := dialTrainer(t, p.addr, "a"), dialTrainer(t, p.addr, "b")
	a.GetTask(wire.Task{})
	a.GetTask(wire.Task{})
	b.GetTask(wire.Task{})
	if got := pendingOf(s); !sameHolders(got, map[int]string{0: "a", 1: "a", 2: "b"}) {
		t.Fatalf("pending %v", got)
	}
	a.RC.Close()
	awaitGrace(t, s, "a", true)
	clock.Advance(5*time.Second - time.Millisecond)
	if got := pendingOf(s); len(got) != 3 {
		t.Fatalf("within the grace the tasks moved: %v", got)
	}
	clock.Advance(time.Millisecond)
	if got := pendingOf(s); !sameHolders(got, map[int]string{2: "b"}) {
		t.Fatalf("after the grace, pending %v, want only b's", got)
	}
	for _, task := range []int{0, 1} {
		if e := entryOf(s, task); e.Queue != taskqueue.Todo || e.Timeouts != 0 || e.Error != "dispatch 1: trainer a lost" {
			t.Fatalf("task %d: %+v", task, e)
		}
	}
	if next := b.GetTask(wire.Task{}); next.Index != 0 || next.Epoch != 2 {
		t.Fatalf("b got task %d epoch %d next, want the released task 0 epoch 2", next.Index, next.Epoch)
	}
	var lost []string
	for _, line := range obs.take() {
		if strings.HasPrefix(line, "trainer lost") {
			lost = append(lost, line)
		}
	}
	want := []string{`trainer lost 0 by "a" timeouts 0 discarded false reason "dispatch 1: trainer a lost"`,
		`trainer lost 1 by "a" timeouts 0 discarded false reason "dispatch 1: trainer a lost"`}
	if !slices.Equal(lost, want) {
		t.Fatalf("observer told %q, want %q", lost, want)
	}
}

func entryOf(svc *Service, task int) taskqueue.Entry {
	s := train(svc)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.q.Entry(task)
}

func sameHolders(got, want map[int]string) bool { return maps.Equal(got, want) }

// TestTrainerBackWithinGrace: a trainer that reconnects within its grace
// keeps its tasks; one that sends no name is never taken for lost.
func TestTrainerBackWithinGrace(t *testing.T) {
	pattern := writeDataset(t, t.TempDir(), 1, 4)
	s, clock := newService(t, Config{ChunksPerTask: 1, TrainerGrace: 5 * time.Second, Queue: taskqueue.Config{Timeout: time.Hour}})
	if err := s.ReportDataset(ctx, []string{pattern}); err != nil {
		t.Fatal(err)
	}
	p := startPort(t, s, trainerport.Config{})
	a, anon := dialTrainer(t, p.addr, "a"), dialTrainer(t, p.addr, "")
	held := a.GetTask(wire.Task{})
	anon.GetTask(wire.Task{})
	a.RC.Close()
	anon.RC.Close()
	awaitGrace(t, s, "a", true)
	clock.Advance(4 * time.Second)
	again := dialTrainer(t, p.addr, "a")
	again.GetTask(held) // finishes its task and takes the next
	awaitGrace(t, s, "a", false)
	clock.Advance(time.Hour - 5*time.Second)
	if got := pendingOf(s); !sameHolders(got, map[int]string{1: "", 2: "a"}) {
		t.Fatalf("pending %v, want the unnamed trainer's task 1 and a's task 2", got)
	}
}

// TestRestoredHoldersGetGrace: after a failover the trainers holding tasks
// in the stored state have the grace to call the new master; those that do
// keep their tasks.
func TestRestoredHoldersGetGrace(t *testing.T) {
	pattern := writeDataset(t, t.TempDir(), 1, 4)
	store := NewMemoryStore()
	cfg := Config{ChunksPerTask: 1, Store: store, TrainerGrace: 5 * time.Second, Queue: taskqueue.Config{Timeout: time.Hour}}
	old, _ := newService(t, cfg)
	if err := old.ReportDataset(ctx, []string{pattern}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b"} {
		if _, err := old.GetTask(ctx, wire.Task{Trainer: name}); err != nil {
			t.Fatal(err)
		}
	}
	old.Close()

	s, clock := newService(t, cfg)
	if err := s.Restore(ctx); err != nil {
		t.Fatal(err)
	}
	if !graceRunning(s, "a") || !graceRunning(s, "b") {
		t.Fatal("no grace started for the restored holders")
	}
	p := startPort(t, s, trainerport.Config{})
	b := dialTrainer(t, p.addr, "b")
	b.GetTask(wire.Task{})
	clock.Advance(10*time.Second - time.Millisecond) // twice the grace after a failover
	if got := pendingOf(s); len(got) != 3 {
		t.Fatalf("within twice the grace, pending %v", got)
	}
	clock.Advance(time.Millisecond)
	if got := pendingOf(s); !sameHolders(got, map[int]string{1: "b", 2: "b"}) {
		t.Fatalf("pending %v, want b's two tasks; a's back in todo", got)
	}
}
