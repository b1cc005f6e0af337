package etcdstore

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/pkg/errors"

	"github.com/trainmaster/master/internal/dataset"
	"github.com/trainmaster/master/internal/etcdembed/etcdtest"
	"github.com/trainmaster/master/internal/master"
	"github.com/trainmaster/master/internal/taskqueue"
)

// TestLoadRefusesBadState: values written over a good state with the etcd
// client are refused, whether they do not decode or do not agree with the
// rest, with an error that is ErrFormat, names the key, says what is wrong
// and keeps its cause.
func TestLoadRefusesBadState(t *testing.T) {
	_, cli := etcdtest.Start(t)
	const ns = "/bad"
	store, _ := lead(t, cli, ns)
	ds := syntheticDataset(t, 95, 10) // 100 files, 95 chunks of 10 records, 10 tasks
	chunks := slices.Clone(ds.Chunks())
	chunks[94].File = 100
	badPage := string(encodeChunks(chunks))
	meta := func(edit func(m map[string]any)) string {
		m := map[string]any{"format": 1, "patterns": ds.Patterns, "chunks_per_task": 10, "files": 100, "chunks": 95, "tasks": 10, "records": 950}
		edit(m)
		b, _ := json.Marshal(m)
		return string(b)
	}
	var syntax *json.SyntaxError
	var unmarshalType *json.UnmarshalTypeError
	for _, tc := range []struct {
		name, key, value, says string
		cause                  func(error) bool
		names                  string // the key the error names, if not key
	}{
		{"negative epoch", "tasks/0000000007", `{"pass":0,"queue":"pending","epoch":-3,"seq":7}`, "epoch -3",
			func(err error) bool { return errors.Is(err, taskqueue.ErrBadEntry) }, ""},
		{"more timeouts than dispatches", "tasks/0000000007", `{"pass":0,"queue":"todo","epoch":2,"timeouts":5,"seq":7}`, "5 timeouts in 2 dispatches",
			func(err error) bool { return errors.Is(err, taskqueue.ErrBadEntry) }, ""},
		{"negative pass of an entry", "tasks/0000000007", `{"pass":-1,"queue":"done","epoch":1,"seq":7}`, "pass -1",
			func(err error) bool { return errors.Is(err, taskqueue.ErrBadEntry) }, ""},
		{"todo order below the front", "tasks/0000000007", `{"pass":0,"queue":"todo","epoch":1,"seq":-4611686018427387905}`, "todo order -4611686018427387905", nil, ""},
		{"trainer of a done task", "tasks/0000000007", `{"pass":0,"queue":"done","epoch":1,"seq":7,"trainer":"a"}`, `trainer "a" named in queue done`, nil, ""},
		{"unknown queue", "tasks/0000000007", `{"pass":0,"queue":"lost","epoch":1,"seq":7}`, `unknown queue "lost"`, nil, ""},
		{"entry not JSON", "tasks/0000000007", `{"pass":0,`, "unexpected end of JSON input", nil, ""},
		{"entry of the wrong type", "tasks/0000000007", `{"pass":"zero","queue":"done","epoch":1}`, "cannot unmarshal",
			func(err error) bool { return errors.As(err, &unmarshalType) }, ""},
		{"entry of a task that does not exist", "tasks/0000000020", `{"pass":0,"queue":"done","epoch":1,"seq":0}`, "not a task of the 10, nor one of the 10 pieces", nil, ""},
		{"piece without bounds", "tasks/0000000010", `{"pass":0,"queue":"done","epoch":1,"seq":0}`, "a piece from 0 to 0", nil, ""},
		{"meta not JSON", "meta", `{"format":1,`, "unexpected end of JSON input", nil, ""},
		{"meta of garbage", "meta", `garbage`, "invalid character",
			func(err error) bool { return errors.As(err, &syntax) }, ""},
		{"newer format", "meta", meta(func(m map[string]any) { m["format"] = 2 }), "holds format 2; this master reads format 1 only", nil, ""},
		{"tasks disagree", "meta", meta(func(m map[string]any) { m["tasks"] = 11 }), "tasks 11, but 95 chunks in tasks of 10 make 10", nil, ""},
		{"chunks per task disagree", "meta", meta(func(m map[string]any) { m["chunks_per_task"] = 5 }), "tasks 10, but 95 chunks in tasks of 5 make 19", nil, ""},
		{"no chunks per task", "meta", meta(func(m map[string]any) { m["chunks_per_task"] = 0 }), "chunks_per_task 0", nil, ""},
		{"records disagree", "meta", meta(func(m map[string]any) { m["records"] = 949 }), "records 949, but the chunks hold 950", nil, ""},
		{"more files than pages", "meta", meta(func(m map[string]any) { m["files"] = 101 }), "missing", nil, "files/000001"},
		{"fewer files than a page", "meta", meta(func(m map[string]any) { m["files"] = 99 }), "holds 100 files", nil, "files/000000"},
		{"more chunks than the page", "meta", meta(func(m map[string]any) { m["chunks"] = 96; m["records"] = 960 }), "holds 95 chunks", nil, "chunks/000000"},
		{"more chunks than pages", "meta", meta(func(m map[string]any) { m["chunks"] = 16385; m["tasks"] = 1639; m["records"] = 163850 }), "make 2 pages", nil, ""},
		{"a chunk of a file that does not exist", "chunks/000000", badPage, "chunk 94 (file 100", nil, ""},
		{"chunk page not gzip", "chunks/000000", "not gzip", "gzip", nil, ""},
		{"file page not JSON", "files/000000", `["a",`, "unexpected end of JSON input", nil, ""},
		{"passes of a dataset without end", "meta", meta(func(m map[string]any) { m["passes"] = 2; m["endless"] = true }), "passes 2 and endless", nil, ""},
		{"negative pass", "pass", `{"pass":-1}`, "pass -1", nil, ""},
		{"pass not JSON", "pass", `{`, "unexpected end of JSON input", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := store.SaveDataset(ctx, ds); err != nil {
				t.Fatal(err)
			}
			good := taskqueue.Change{Records: []taskqueue.Record{{Index: 3, Entry: taskqueue.Entry{Queue: taskqueue.Done, Epoch: 1, Seq: 3}}}}
			if err := store.Commit(ctx, 0, good); err != nil {
				t.Fatal(err)
			}
			put(t, cli, ns+"/task_queues/"+tc.key, tc.value)
			key := ns + "/task_queues/" + cmp.Or(tc.names, tc.key)
			err := loadAll(store)
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("load: %v, want ErrFormat", err)
			}
			if !strings.Contains(err.Error(), key+": ") || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("load: %q does not name %s and say %q", err, key, tc.says)
			}
			if tc.cause != nil && !tc.cause(err) {
				t.Fatalf("load: %q lost its cause", err)
			}
		})
	}
}

// loadAll loads the state and reads every entry, as a master restoring its
// queues does.
func loadAll(store *Store) error {
	snap, err := store.Load(ctx)
	if err != nil {
		return err
	}
	for _, err := range snap.Entries {
		if err != nil {
			return err
		}
	}
	return nil
}

// TestErrorsKeepTheirCause: a refused state is ErrFormat and its cause for
// errors.Is and errors.As, and the message has both.
func TestErrorsKeepTheirCause(t *testing.T) {
	cause := fmt.Errorf("%w: task 7: epoch -3", taskqueue.ErrBadEntry)
	err := errors.Wrap(badState("/ns/task_queues/tasks/0000000007", cause), "master: restore queues")
	if !errors.Is(err, ErrFormat) || !errors.Is(err, taskqueue.ErrBadEntry) {
		t.Fatalf("%v: ErrFormat %v, cause %v", err, errors.Is(err, ErrFormat), errors.Is(err, taskqueue.ErrBadEntry))
	}
	if errors.Is(err, master.ErrLeadershipLost) {
		t.Fatal("a format error is every error")
	}
	want := "master: restore queues: etcdstore: stored state not understood: /ns/task_queues/tasks/0000000007: taskqueue: stored entry not valid: task 7: epoch -3"
	if err.Error() != want {
		t.Fatalf("message %q, want %q", err, want)
	}
}

// TestEntriesAreStreamed: Load reads no entry; ranging over the entries
// reads them a part at a time with at most `readers` reads in flight, in
// task order; stopping early stops the reads.
func TestEntriesAreStreamed(t *testing.T) {
	_, cli := etcdtest.Start(t)
	leader, _ := lead(t, cli, "/stream")
	store, spy := spiedStore(t, cli, leader, Config{})
	const parts = 12
	ds := syntheticDataset(t, parts*entriesPerRead, 1)
	if err := store.SaveDataset(ctx, ds); err != nil {
		t.Fatal(err)
	}
	var ch taskqueue.Change
	var want []int
	for i := 0; i < ds.NumTasks(); i += entriesPerRead / 2 {
		ch.Records = append(ch.Records, taskqueue.Record{Index: i, Entry: taskqueue.Entry{Queue: taskqueue.Done, Epoch: 1, Seq: int64(i)}})
		want = append(want, i)
	}
	if err := store.Commit(ctx, 0, ch); err != nil {
		t.Fatal(err)
	}

	snap, err := store.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := spy.reads.Load(); n != 0 {
		t.Fatalf("Load read the entries (%d reads) before they were asked for", n)
	}
	var got []int
	for _, r := range entries(t, snap) {
		got = append(got, r.Index)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("entries of tasks %v, want %v", got, want)
	}
	if n, most := spy.reads.Load(), spy.maxInFlight.Load(); n < parts || most > readers {
		t.Fatalf("%d reads, up to %d at once; want at least %d, at most %d at once", n, most, parts, readers)
	}

	spy.reads.Store(0)
	for r, err := range snap.Entries {
		if err != nil || r.Index != 0 {
			t.Fatalf("first entry %+v, %v", r, err)
		}
		break
	}
	if n := spy.reads.Load(); n > readers+2 {
		t.Fatalf("taking one entry made %d reads", n)
	}
	if n := spy.inFlight.Load(); n != 0 {
		t.Fatalf("%d reads still in flight after the range stopped", n)
	}
}

// TestDatasetRoundTrip: the index and file list come back as they were
// saved, across several pages of each.
func TestDatasetRoundTrip(t *testing.T) {
	_, cli := etcdtest.Start(t)
	store, _ := lead(t, cli, "/round")
	ds := largerDataset(t)
	if err := store.SaveDataset(ctx, ds); err != nil {
		t.Fatal(err)
	}
	snap, err := store.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := snap.Dataset
	if !slices.Equal(got.Files, ds.Files) || !slices.Equal(got.Chunks(), ds.Chunks()) || got.NumTasks() != ds.NumTasks() ||
		got.NumRecords() != ds.NumRecords() || !slices.Equal(got.Patterns, ds.Patterns) || snap.Pass != 0 {
		t.Fatalf("loaded %d files, %d chunks, %d tasks, %d records, pass %d; saved %d, %d, %d, %d",
			len(got.Files), got.NumChunks(), got.NumTasks(), got.NumRecords(), snap.Pass, len(ds.Files), ds.NumChunks(), ds.NumTasks(), ds.NumRecords())
	}
	if _, err := dataset.Restore(got.Patterns, got.Files, got.ChunksPerTask, got.Chunks()); err != nil {
		t.Fatal(err)
	}
}
