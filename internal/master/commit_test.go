package master

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/taskqueue"
)

// gateStore holds each commit until the test lets it through, and records
// the size of every commit.
type gateStore struct {
	*MemoryStore
	entered chan taskqueue.Change // a commit has started
	release chan error            // its outcome
}

func newGateStore() *gateStore {
	return &gateStore{MemoryStore: NewMemoryStore(), entered: make(chan taskqueue.Change), release: make(chan error)}
}

func (g *gateStore) Commit(ctx context.Context, round int, ch taskqueue.Change) error {
	g.entered <- ch
	if err := <-g.release; err != nil {
		return err
	}
	return g.MemoryStore.Commit(ctx, round, ch)
}

type result struct {
	task wire.Task
	err  error
}

// getTasks starts n GetTask calls and returns where their results arrive.
func getTasks(s *Service, n int) chan result {
	out := make(chan result, n)
	for range n {
		go func() {
			task, err := s.GetTask(ctx, wire.Task{})
			out <- result{task, err}
		}()
	}
	return out
}

// assertNoReply fails if a call replied: nothing it was told is durable yet.
func assertNoReply(t *testing.T, out chan result) {
	t.Helper()
	select {
	case r := <-out:
		t.Fatalf("a call replied before its change was committed: %+v", r)
	case <-time.After(50 * time.Millisecond):
	}
}

func startGated(t *testing.T, tasks int) (*Service, *gateStore) {
	t.Helper()
	store := newGateStore()
	s, _ := newService(t, Config{ChunksPerTask: 1, Store: store})
	if err := s.ReportDataset(ctx, []string{writeDataset(t, t.TempDir(), 1, tasks)}); err != nil {
		t.Fatal(err)
	}
	return s, store
}

// TestChangesMadeDuringACommitAreCommittedTogether: the dispatches made
// while a commit is in flight wait, and are committed together in the
// next; JobState counts what waits, the commit in flight included.
func TestChangesMadeDuringACommitAreCommittedTogether(t *testing.T) {
	s, store := startGated(t, 10)
	first := getTasks(s, 1)
	if ch := <-store.entered; len(ch.Records) != 1 {
		t.Fatalf("first commit %+v", ch)
	}
	rest := getTasks(s, 5)
	for pendingInMemory(s) != 6 { // all five dispatched in memory, waiting
		time.Sleep(time.Millisecond)
	}
	assertNoReply(t, first)
	assertNoReply(t, rest)
	if j := s.Jobs()[0]; j.CommitWaiting != 6 || j.CommitGroups != 2 {
		t.Errorf("waiting: %d entries, %d commits; want 6 and 2", j.CommitWaiting, j.CommitGroups)
	}
	store.release <- nil
	if r := <-first; r.err != nil {
		t.Fatal(r.err)
	}
	if ch := <-store.entered; len(ch.Records) != 5 {
		t.Fatalf("second commit has %d entries, want the 5 dispatches made while the first was in flight", len(ch.Records))
	}
	assertNoReply(t, rest)
	store.release <- nil
	seen := map[int]bool{}
	for range 5 {
		r := <-rest
		if r.err != nil || seen[r.task.Index] {
			t.Fatalf("%+v", r)
		}
		seen[r.task.Index] = true
	}
	if store.Commits() != 2 {
		t.Fatalf("%d commits, want 2", store.Commits())
	}
	if j := s.Jobs()[0]; j.CommitWaiting != 0 || j.CommitGroups != 0 {
		t.Errorf("once committed: %d entries, %d commits wait", j.CommitWaiting, j.CommitGroups)
	}
}

func TestGroupsRespectTheirSizeLimit(t *testing.T) {
	store := newGateStore()
	s, _ := newService(t, Config{ChunksPerTask: 1, Store: store, GroupRecords: 2})
	if err := s.ReportDataset(ctx, []string{writeDataset(t, t.TempDir(), 1, 10)}); err != nil {
		t.Fatal(err)
	}
	first := getTasks(s, 1)
	<-store.entered
	rest := getTasks(s, 5)
	for pendingInMemory(s) != 6 {
		time.Sleep(time.Millisecond)
	}
	store.release <- nil
	var sizes []int
	for range 3 {
		sizes = append(sizes, len((<-store.entered).Records))
		store.release <- nil
	}
	if sizes[0] != 2 || sizes[1] != 2 || sizes[2] != 1 {
		t.Fatalf("groups of %v entries, want 2, 2, 1", sizes)
	}
	<-first
	for range 5 {
		if r := <-rest; r.err != nil {
			t.Fatal(r.err)
		}
	}
}

// TestAFailedCommitFailsEverythingBuiltOnIt: the calls queued behind a
// failed commit fail with it, including a reply read off the uncommitted
// state, and the state is reloaded from what is durable.
func TestAFailedCommitFailsEverythingBuiltOnIt(t *testing.T) {
	s, store := startGated(t, 3)
	first := getTasks(s, 1)
	<-store.entered
	rest := getTasks(s, 2)
	for pendingInMemory(s) != 3 {
		time.Sleep(time.Millisecond)
	}
	// Every task is handed out in memory, so this call is told "no task",
	// but only once the dispatches it saw are durable.
	none := getTasks(s, 1)
	assertNoReply(t, none)
	store.release <- errors.New("etcd unavailable")
	for _, out := range []chan result{first, rest, rest, none} {
		if r := <-out; !wire.Is(r.err, wire.TextNotServing) {
			t.Fatalf("a call built on the failed commit got %+v", r)
		}
	}
	go func() { // the next call reloads: nothing was durable, task 0 comes first
		<-store.entered
		store.release <- nil
	}()
	task, err := s.GetTask(ctx, wire.Task{})
	if err != nil || task.Index != 0 || task.Epoch != 1 {
		t.Fatalf("after reload: %+v %v", task, err)
	}
	if st := status(t, s); st.Pending != 1 || st.Todo != 2 {
		t.Fatalf("after reload: %+v", st)
	}
}

// TestStatusShowsOnlyDurableChanges: a Status call made while a dispatch
// is being committed answers once the dispatch is durable, and answers
// "not serving" if its commit fails, instead of counting a pending task
// that etcd never recorded.
func TestStatusShowsOnlyDurableChanges(t *testing.T) {
	s, store := startGated(t, 3)
	for _, outcome := range []error{errors.New("etcd unavailable"), nil} {
		dispatch := getTasks(s, 1)
		<-store.entered
		statuses := make(chan result, 1)
		go func() {
			st, err := s.Status(ctx)
			statuses <- result{wire.Task{Index: st.Pending}, err}
		}()
		assertNoReply(t, statuses)
		store.release <- outcome
		got, r := <-statuses, <-dispatch
		if outcome != nil {
			if !wire.Is(got.err, wire.TextNotServing) || !wire.Is(r.err, wire.TextNotServing) {
				t.Fatalf("status %+v and dispatch %+v after a failed commit", got, r)
			}
			continue
		}
		if got.err != nil || got.task.Index != 1 || r.err != nil {
			t.Fatalf("status %+v (pending in .task.Index) and dispatch %+v after a commit", got, r)
		}
	}
}

// TestEventsWaitForTheirCommit: what an operation tells the Observer is
// told once its change is durable, not when it was made.
func TestEventsWaitForTheirCommit(t *testing.T) {
	obs := &recordingObserver{}
	store := newGateStore()
	s, _ := newService(t, Config{ChunksPerTask: 1, Store: store, Observer: obs})
	if err := s.ReportDataset(ctx, []string{writeDataset(t, t.TempDir(), 1, 2)}); err != nil {
		t.Fatal(err)
	}
	out := getTasks(s, 1)
	<-store.entered
	assertNoReply(t, out)
	if got := obs.take(); len(got) != 1 || got[0] != "called unnamed" {
		t.Fatalf("told %q before the dispatch was committed", got)
	}
	store.release <- nil
	r := <-out
	if r.err != nil {
		t.Fatal(r.err)
	}
	want := fmt.Sprintf("dispatched %d pass 0 epoch 1 records 3 to unnamed", r.task.Index)
	if got := obs.take(); len(got) != 1 || got[0] != want {
		t.Fatalf("told %q once committed, want %q", got, want)
	}
}

// TestGroupsGrowWithTheBacklogWithinTheStoresLimits: changes queued behind
// a commit join the open group until the next would take it past the
// store's limits (GroupLimiter: entries, bytes), counting an entry written
// again once; a change alone larger than the limits is a group of its own.
func TestGroupsGrowWithTheBacklogWithinTheStoresLimits(t *testing.T) {
	change := func(indexes ...int) taskqueue.Change {
		ch := taskqueue.Change{Pass: 0}
		for _, i := range indexes {
			ch.Records = append(ch.Records, taskqueue.Record{Index: i, Entry: taskqueue.Entry{Trainer: fmt.Sprint("t", i)}})
		}
		return ch
	}
	tenBytes := func(taskqueue.Record) int { return 10 }
	cases := []struct {
		name    string
		limit   groupLimit
		changes [][]int
		want    [][]int
	}{
		{"by entries", groupLimit{records: 3}, [][]int{{1}, {2}, {3}, {4}, {5}}, [][]int{{1, 2, 3}, {4, 5}}},
		{"by bytes", groupLimit{records: 100, bytes: 25, size: tenBytes}, [][]int{{1}, {2}, {3}, {4}, {5}}, [][]int{{1, 2}, {3, 4}, {5}}},
		{"an entry again counts once", groupLimit{records: 100, bytes: 25, size: tenBytes}, [][]int{{1}, {2}, {1}, {2}, {3}}, [][]int{{1, 2}, {3}}},
		{"a change larger than the limits", groupLimit{records: 2, bytes: 25, size: tenBytes}, [][]int{{1}, {2, 3, 4}, {5}}, [][]int{{1}, {2, 3, 4}, {5}}},
		{"thousands, one group", groupLimit{records: 5000, bytes: 1 << 20, size: tenBytes}, nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &datasetService{limit: tc.limit}
			if tc.changes == nil {
				for i := range 4000 {
					s.enqueue(change(i % 3000))
				}
				if len(s.groups) != 1 || len(s.groups[0].batch.Records) != 3000 || s.groups[0].bytes != 30000 {
					t.Fatalf("%d groups, the first of %d entries and %d bytes", len(s.groups), len(s.groups[0].batch.Records), s.groups[0].bytes)
				}
				return
			}
			for _, c := range tc.changes {
				s.enqueue(change(c...))
			}
			var got [][]int
			for _, g := range s.groups {
				var indexes []int
				for _, r := range g.batch.Records {
					indexes = append(indexes, r.Index)
				}
				got = append(got, indexes)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("groups %v, want %v", got, tc.want)
			}
		})
	}
}
