package recordio

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/golang/snappy"
)

// benchRecords returns records of 100 to 1,000 bytes of word-like text, which
// snappy compresses about as well as typical training examples.
func benchRecords(totalBytes int) [][]byte {
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"alpha", "beta", "gamma", "delta", "tensor", "label", "0.125", "-3.5", "feature", "42"}
	var records [][]byte
	for n := 0; n < totalBytes; {
		size := 100 + rng.IntN(900)
		var b []byte
		for len(b) < size {
			b = append(b, words[rng.IntN(len(words))]...)
			b = append(b, ' ')
		}
		records = append(records, b)
		n += len(b)
	}
	return records
}

func writeBenchFile(b *testing.B, records [][]byte, opts ...WriterOption) (string, int64) {
	b.Helper()
	path := filepath.Join(b.TempDir(), "bench.recordio")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := NewWriter(f, opts...)
	var plain int64
	for _, r := range records {
		if err := w.Write(r); err != nil {
			b.Fatal(err)
		}
		plain += int64(len(r))
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	return path, plain
}

// BenchmarkIndex indexes files with the same number of chunks, small and
// large: a header-only scan takes about the same time for both.
func BenchmarkIndex(b *testing.B) {
	const chunks = 256
	for _, payload := range []int{1 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("payload=%dKiB", payload>>10), func(b *testing.B) {
			records := make([][]byte, chunks)
			for i := range records {
				records[i] = make([]byte, payload)
			}
			path, _ := writeBenchFile(b, records, WithCompressor(None), WithMaxChunkBytes(payload))
			b.ResetTimer()
			for b.Loop() {
				ix, err := IndexFile(path)
				if err != nil || len(ix.Chunks) != chunks {
					b.Fatalf("%v, %d chunks", err, len(ix.Chunks))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*chunks), "ns/chunk")
		})
	}
}

// BenchmarkScanSnappy compares, in one run, the Scanner over every record of
// a snappy file with the bare loop it cannot beat: read each chunk's bytes,
// CRC-32 them and decode the snappy stream with the snappy package's reader.
// It reports both rates and their ratio.
func BenchmarkScanSnappy(b *testing.B) {
	path, plain := writeBenchFile(b, benchRecords(64<<20), WithCompressor(Snappy), WithMaxChunkBytes(1<<20))
	ix, err := IndexFile(path)
	if err != nil {
		b.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var bare, scan time.Duration
	var stored, out []byte
	sr := snappy.NewReader(nil)
	for b.Loop() {
		start := time.Now()
		for _, c := range ix.Chunks {
			stored = grow(stored[:0], int(c.StoredBytes))
			if _, err := f.ReadAt(stored, c.Offset+headerSize); err != nil {
				b.Fatal(err)
			}
			if crc32.ChecksumIEEE(stored) == 0 {
				b.Fatal("zero checksum")
			}
			sr.Reset(bytes.NewReader(stored))
			buf := bytes.NewBuffer(out[:0])
			if _, err := io.Copy(buf, sr); err != nil {
				b.Fatal(err)
			}
			out = buf.Bytes()
		}
		bare += time.Since(start)

		start = time.Now()
		s := NewScanner(ix.Refs(0, len(ix.Chunks)))
		var n int
		for s.Scan() {
			n += len(s.Record())
		}
		if s.Err() != nil || int64(n) != plain {
			b.Fatalf("%v: scanned %d bytes of %d", s.Err(), n, plain)
		}
		s.Close()
		scan += time.Since(start)
	}
	mb := float64(plain) * float64(b.N) / 1e6
	b.ReportMetric(mb/bare.Seconds(), "bare-MB/s")
	b.ReportMetric(mb/scan.Seconds(), "scan-MB/s")
	b.ReportMetric(bare.Seconds()/scan.Seconds(), "scan/bare")
}

// BenchmarkWrite measures a writer in its steady state: 1 MiB chunks, buffers
// already grown.
func BenchmarkWrite(b *testing.B) {
	records := benchRecords(16 << 20)
	var plain int64
	for _, r := range records {
		plain += int64(len(r))
	}
	for _, c := range []Compressor{None, Snappy, Gzip} {
		b.Run(c.String(), func(b *testing.B) {
			b.SetBytes(plain)
			w := NewWriter(io.Discard, WithCompressor(c), WithMaxChunkBytes(1<<20))
			for b.Loop() {
				for _, r := range records {
					if err := w.Write(r); err != nil {
						b.Fatal(err)
					}
				}
				if err := w.Flush(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
