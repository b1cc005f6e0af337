package recordio_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/trainmaster/master/go/recordio"
)

// Write a file with a Writer, index its chunks by their headers alone, and
// read some of its records back: the records of the file's second chunk on.
func Example() {
	dir, err := os.MkdirTemp("", "recordio-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "part-000.recordio")

	f, err := os.Create(path)
	if err != nil {
		log.Fatal(err)
	}
	// Chunks of at most 16 bytes of records: two records of 8 bytes each.
	w := recordio.NewWriter(f, recordio.WithCompressor(recordio.Snappy), recordio.WithMaxChunkBytes(16))
	for i := range 5 {
		if err := w.Write(fmt.Appendf(nil, "record %d", i)); err != nil {
			log.Fatal(err)
		}
	}
	if err := w.Close(); err != nil { // flushes the last chunk
		log.Fatal(err)
	}
	if err := f.Close(); err != nil {
		log.Fatal(err)
	}

	ix, err := recordio.IndexFile(path)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d records in %d chunks\n", ix.NumRecords, len(ix.Chunks))

	s := recordio.NewScanner(ix.Refs(1, len(ix.Chunks)))
	defer s.Close()
	for s.Scan() {
		fmt.Printf("chunk %d: %s\n", s.Chunk().Chunk, s.Record())
	}
	if err := s.Err(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// 5 records in 3 chunks
	// chunk 1: record 2
	// chunk 1: record 3
	// chunk 2: record 4
}

// ScanRecords reads a range of records, counted from the start of the file,
// and reads only the chunks that hold them.
func ExampleScanRecords() {
	dir, err := os.MkdirTemp("", "recordio-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "part-000.recordio")
	record := func(i int) []byte { return fmt.Appendf(nil, "record %d", i) }
	if err := recordio.WriteFile(path, 10, record, recordio.WithMaxChunkBytes(32)); err != nil {
		log.Fatal(err)
	}

	ix, err := recordio.IndexFile(path)
	if err != nil {
		log.Fatal(err)
	}
	s := recordio.ScanRecords(ix, 3, 3)
	defer s.Close()
	for s.Scan() {
		fmt.Printf("%s\n", s.Record())
	}
	if err := s.Err(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// record 3
	// record 4
	// record 5
}
