package clienttest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/trainmaster/master/go/recordio"
)

// WriteFiles writes files RecordIO files of records records each, perChunk
// records to a chunk, into dir, and returns their paths and all records in
// dataset order (files sorted by name, as the fake master orders them).
func WriteFiles(tb testing.TB, dir string, files, records, perChunk int) (paths []string, all [][]byte) {
	tb.Helper()
	for f := range files {
		var recs [][]byte
		for r := range records {
			recs = append(recs, fmt.Appendf(nil, "file %03d record %06d", f, r))
		}
		path := filepath.Join(dir, fmt.Sprintf("part-%03d.recordio", f))
		writeFile(tb, path, recs, perChunk)
		paths = append(paths, path)
		all = append(all, recs...)
	}
	return paths, all
}

// writeFile writes recs, all of one length, perChunk to a chunk.
func writeFile(tb testing.TB, path string, recs [][]byte, perChunk int) {
	tb.Helper()
	record := func(i int) []byte { return recs[i] }
	if err := recordio.WriteFile(path, len(recs), record, recordio.WithMaxChunkBytes(perChunk*len(recs[0]))); err != nil {
		tb.Fatal(err)
	}
}

// CorruptChunk flips a byte in the middle of the stored payload of chunk
// number chunk of the file, so that reading it fails its checksum while the
// file still indexes.
func CorruptChunk(tb testing.TB, path string, chunk int) {
	tb.Helper()
	ix, err := recordio.IndexFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	const headerSize = 20 // see doc/recordio.md
	c := ix.Chunks[chunk]
	data[c.Offset+headerSize+int64(c.StoredBytes)/2] ^= 0xff
	if err := os.WriteFile(path, data, 0o644); err != nil {
		tb.Fatal(err)
	}
}
