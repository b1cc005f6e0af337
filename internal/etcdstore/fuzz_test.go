package etcdstore

import (
	"testing"
	"time"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/dataset"
	"github.com/trainmaster/master/internal/taskqueue"
)

// FuzzDecodeEntry: whatever bytes a task key holds, decoding errs or yields
// an entry that encodes back to the same entry (its reason cut as the store
// cuts it).
func FuzzDecodeEntry(f *testing.F) {
	now := time.Date(2026, 11, 22, 4, 0, 0, 0, time.UTC)
	f.Add(encodeEntry(0, taskqueue.Entry{Pass: 1, Queue: taskqueue.Pending, Epoch: 2, Seq: 7, Dispatched: now, Deadline: now.Add(time.Minute)}, maxEntryErrorBytes))
	f.Add(encodeEntry(0, taskqueue.Entry{Queue: taskqueue.Failed, Timeouts: 4, Error: "dispatch 4 failed: bad block"}, maxEntryErrorBytes))
	f.Add(encodeEntry(0, taskqueue.Entry{Pass: 2, Queue: taskqueue.Pending, Epoch: 1, Seq: 9, Progress: 40, Of: 3, From: 30, To: 70, For: taskqueue.Finished{Task: 1, Epoch: 2, Pass: 2}, Dispatched: now, Deadline: now.Add(time.Minute)}, maxEntryErrorBytes))
	f.Add(encodeEntry(4, taskqueue.Entry{Pass: 1, Queue: taskqueue.Pending, Epoch: 1, Seq: -2, Of: 1, From: 50, To: 100, Rank: 1, Group: wire.Group{Ranks: 2, Batch: 8}, Dispatched: now}, maxEntryErrorBytes))
	f.Add([]byte(`{"queue":"lost"}`))
	f.Add([]byte(`{"pass":-1,"queue":"done","epoch":1e300}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := decodeEntry(b)
		if err != nil {
			return
		}
		again, err := decodeEntry(encodeEntry(0, e, maxEntryErrorBytes))
		e.Error = cutError(e.Error, maxEntryErrorBytes)
		if err != nil || again != e {
			t.Fatalf("%q decodes to %+v, which round-trips to %+v (%v)", b, e, again, err)
		}
	})
}

// FuzzDecodeChunks: a chunk page of any bytes errs or decodes into whole
// chunks, never more than a page holds.
func FuzzDecodeChunks(f *testing.F) {
	f.Add(encodeChunks([]dataset.Chunk{{Offset: 4096, File: 1, Idx: 2, NumRecords: 30}}))
	f.Add(encodeChunks(nil))
	f.Add([]byte("not gzip"))
	f.Fuzz(func(t *testing.T, b []byte) {
		chunks, err := decodeChunks(nil, b)
		if err != nil {
			return
		}
		if len(chunks) > chunksPerPage {
			t.Fatalf("%d chunks from one page", len(chunks))
		}
		back, err := decodeChunks(nil, encodeChunks(chunks))
		if err != nil || len(back) != len(chunks) {
			t.Fatalf("re-encoded page: %d chunks, %v", len(back), err)
		}
	})
}
