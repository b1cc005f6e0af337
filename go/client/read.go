package client

import (
	"context"
	"os"
	"sync"

	"github.com/pkg/errors"

	"github.com/trainmaster/master/go/recordio"
	"github.com/trainmaster/master/go/wire"
)

// taskBuf holds the records of one task read into memory: one
// recordio.Reader per block, whose buffers the records point into, so that
// they are yielded without being copied. A taskBuf is reused, buffers and
// all, for a later task once the loop has consumed its records (release);
// in steady state reading a task allocates nothing.
type taskBuf struct {
	readers []*recordio.Reader // readers[i] holds block i's records
	records [][]byte           // every record of the task, in order
}

// taskBufs are the taskBufs no task holds, shared by every session; the
// garbage collector may empty it.
var taskBufs = sync.Pool{New: func() any { return new(taskBuf) }}

// readTask reads and checks every block of t and returns its records in
// order, in a taskBuf to release once they are consumed. Nothing is returned
// unless every block reads cleanly.
func readTask(ctx context.Context, t wire.Task) (*taskBuf, error) {
	tb := taskBufs.Get().(*taskBuf)
	if err := tb.read(ctx, t); err != nil {
		tb.release()
		return nil, err
	}
	return tb, nil
}

// release gives tb back for another task: its records must not be used any
// more.
func (tb *taskBuf) release() {
	for _, r := range tb.readers {
		r.Reset(nil, 0, "") // keep no closed file alive
	}
	tb.records = tb.records[:0] // they point into the readers' buffers
	taskBufs.Put(tb)
}

// read reads the blocks of t into tb, keeping a file open from one block to
// the next (a task's blocks are consecutive chunks, mostly of one file).
// A task trained in file order skips the blocks wholly outside its From
// and To (a task resumed, a piece of one): their records are left nil,
// never yielded.
func (tb *taskBuf) read(ctx context.Context, t wire.Task) error {
	var f taskFile
	defer f.close()
	tb.records = tb.records[:0]
	for i, b := range t.Blocks {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		if pos := len(tb.records); t.Seed == 0 && b.NumRecords > 0 && (pos+b.NumRecords <= t.From || t.To > 0 && pos >= t.To) {
			tb.records = append(tb.records, make([][]byte, b.NumRecords)...)
			continue
		}
		if err := f.open(b.Path); err != nil {
			return errors.WithMessagef(err, "task %d block %d", t.Index, i)
		}
		for len(tb.readers) <= i { // blocks skipped before it have none yet
			tb.readers = append(tb.readers, recordio.NewReader(nil, 0, ""))
		}
		tb.readers[i].Reset(f.f, f.size, b.Path)
		recs, _, err := tb.readers[i].ReadChunk(b.Idx, b.Offset)
		if err == nil && b.NumRecords != 0 && b.NumRecords != len(recs) {
			// Zero means the master did not say; otherwise the file changed
			// since the master indexed it.
			err = errors.Errorf("recordio: %s: chunk %d at offset %d: master says %d records, chunk holds %d",
				b.Path, b.Idx, b.Offset, b.NumRecords, len(recs))
		}
		if err != nil {
			return errors.WithMessagef(err, "task %d block %d", t.Index, i)
		}
		tb.records = append(tb.records, recs...)
	}
	return nil
}

// taskFile is the file a task's blocks are being read from.
type taskFile struct {
	f    *os.File // nil when none is open
	path string
	size int64
}

// open makes path the open file, unless it already is.
func (tf *taskFile) open(path string) error {
	if tf.f != nil && tf.path == path {
		return nil
	}
	tf.close()
	f, err := os.Open(path)
	if err != nil {
		return errors.WithMessage(err, "recordio")
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return errors.WithMessage(err, "recordio")
	}
	tf.f, tf.path, tf.size = f, path, st.Size()
	return nil
}

// close closes the open file, if any; it was only read, so there is no
// error worth reporting.
func (tf *taskFile) close() {
	if tf.f != nil {
		tf.f.Close()
		tf.f = nil
	}
}
