package recordio

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// addSeeds gives a fuzz target every reference fixture and the test vectors.
func addSeeds(f *testing.F) {
	f.Add(unhex(f, "04030201 b1b17049 00000000 0b000000 02000000 01000000 61 02000000 6263"))
	f.Add(unhex(f, "04030201 559cd055 01000000 1d000000 02000000 ff060000 734e61507059 01 0f0000 f023991b 01000000 61 02000000 6263"))
	paths, _ := filepath.Glob("testdata/*.recordio")
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
}

// FuzzReadChunk reads chunk after chunk from arbitrary bytes: any outcome but
// a panic, a hang or a huge allocation is fine, and errors must be *Error.
func FuzzReadChunk(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReader(bytes.NewReader(data), int64(len(data)), "fuzz")
		for chunk, off := 0, int64(0); off < int64(len(data)); chunk++ {
			records, next, err := r.ReadChunk(chunk, off)
			if err != nil {
				var ce *Error
				if !errors.As(err, &ce) || ce.Chunk != chunk || ce.Offset != off {
					t.Fatalf("error %v does not locate chunk %d at %d", err, chunk, off)
				}
				return
			}
			if next <= off || next > int64(len(data)) {
				t.Fatalf("chunk at %d says the next is at %d", off, next)
			}
			for _, rec := range records {
				_ = rec[:len(rec)] // records must be valid slices
			}
			off = next
		}
	})
}

// FuzzScanIndex indexes arbitrary bytes; a successful index must describe
// chunks that lie inside the file, one after the other.
func FuzzScanIndex(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		ix, err := ScanIndex(bytes.NewReader(data), int64(len(data)), "fuzz")
		if err != nil {
			return
		}
		end := int64(0)
		for i, c := range ix.Chunks {
			if c.Offset != end {
				t.Fatalf("chunk %d at %d, previous ended at %d", i, c.Offset, end)
			}
			end = c.Offset + headerSize + int64(c.StoredBytes)
		}
		if end != int64(len(data)) {
			t.Fatalf("chunks end at %d of %d bytes", end, len(data))
		}
	})
}

// FuzzRoundTrip cuts arbitrary bytes into records, writes them and reads them
// back unchanged with every compressor.
func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte("a\nbc\n\nlonger record\n"), uint16(4))
	f.Add(bytes.Repeat([]byte("x"), 70000), uint16(0))
	f.Fuzz(func(t *testing.T, data []byte, limit uint16) {
		records := bytes.Split(data, []byte("\n"))
		for _, c := range []Compressor{None, Snappy, Gzip} {
			back, _ := readAll(t, writeAll(t, records, WithCompressor(c), WithMaxChunkBytes(int(limit))))
			if len(back) != len(records) {
				t.Fatalf("%v: %d records back, %d written", c, len(back), len(records))
			}
			for i := range records {
				if !bytes.Equal(back[i], records[i]) {
					t.Fatalf("%v: record %d differs", c, i)
				}
			}
		}
	})
}
