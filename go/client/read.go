package client

import (
	"context"
	"fmt"

	"github.com/trainmaster/master/go/recordio"
	"github.com/trainmaster/master/go/wire"
)

// readTask reads and checks every block of t and returns its records in
// order, copied out of the reader's buffers. Nothing is returned unless
// every block reads cleanly.
func readTask(ctx context.Context, t wire.Task) ([][]byte, error) {
	var r blockReader
	defer r.close()
	var records [][]byte
	for i, b := range t.Blocks {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		recs, err := r.read(b)
		if err != nil {
			return nil, fmt.Errorf("task %d block %d: %w", t.Index, i, err)
		}
		records = appendCopies(records, recs)
	}
	return records, nil
}

// appendCopies appends copies of recs to dst, all in one new buffer.
func appendCopies(dst, recs [][]byte) [][]byte {
	size := 0
	for _, r := range recs {
		size += len(r)
	}
	buf := make([]byte, 0, size)
	for _, r := range recs {
		start := len(buf)
		buf = append(buf, r...)
		dst = append(dst, buf[start:len(buf):len(buf)])
	}
	return dst
}

// blockReader reads blocks, keeping the last file open for the next block
// (a task's blocks are consecutive chunks, mostly of one file).
type blockReader struct {
	s *recordio.Scanner
}

// read returns the records of b, valid until the next read.
func (br *blockReader) read(b wire.Block) ([][]byte, error) {
	if br.s == nil {
		br.s = recordio.NewScanner(nil)
	}
	recs, err := br.s.ReadChunk(recordio.ChunkRef{Path: b.Path, Chunk: b.Idx, Offset: b.Offset})
	if err != nil {
		return nil, err
	}
	// Zero means the master did not say; otherwise the file changed since
	// the master indexed it.
	if b.NumRecords != 0 && b.NumRecords != len(recs) {
		return nil, fmt.Errorf("recordio: %s: chunk %d at offset %d: master says %d records, chunk holds %d",
			b.Path, b.Idx, b.Offset, b.NumRecords, len(recs))
	}
	return recs, nil
}

func (br *blockReader) close() {
	if br.s != nil {
		br.s.Close()
	}
}
