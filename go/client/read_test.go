package client

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/trainmaster/master/go/recordio"
	"github.com/trainmaster/master/go/wire"
)

// TestReadSkipsBlocksOutsideTheRange: a task trained in file order reads
// only the blocks its From and To reach into (the others here name a file
// that does not exist); a shuffled one reads them all.
func TestReadSkipsBlocksOutsideTheRange(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.recordio")
	record := func(i int) []byte { return fmt.Appendf(nil, "record %02d", i) }
	if err := recordio.WriteFile(path, 50, record, recordio.WithMaxChunkBytes(10*len(record(0)))); err != nil {
		t.Fatal(err)
	}
	ix, err := recordio.IndexFile(path)
	if err != nil || len(ix.Chunks) != 5 {
		t.Fatalf("%v chunks, %v", ix, err)
	}
	task := wire.Task{Index: 3, Epoch: 1, From: 22, To: 31}
	for i, c := range ix.Chunks {
		b := wire.Block{Path: path, Idx: i, Offset: c.Offset, NumRecords: int(c.NumRecords)}
		if i != 2 && i != 3 {
			b.Path = path + ".gone" // records 0-19 and 40-49: never opened
		}
		task.Blocks = append(task.Blocks, b)
	}
	tb, err := readTask(context.Background(), task)
	if err != nil {
		t.Fatal(err)
	}
	defer tb.release()
	if len(tb.records) != 50 {
		t.Fatalf("%d records, want the task's 50 positions", len(tb.records))
	}
	for i := 20; i < 40; i++ {
		if string(tb.records[i]) != string(record(i)) {
			t.Fatalf("record %d: %q", i, tb.records[i])
		}
	}
	task.Seed = 7
	if _, err := readTask(context.Background(), task); err == nil {
		t.Fatal("a shuffled task skipped blocks: its positions are not the file's")
	}
}
