package dataset

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/trainmaster/master/go/recordio"
)

// writeBenchFiles writes files identical RecordIO files of chunks chunks, one
// 8-byte record each, uncompressed, into a new directory, and returns the
// glob matching them. The bytes are made once and copied, so 10,000 files
// take about a second.
func writeBenchFiles(b *testing.B, files, chunks int) string {
	b.Helper()
	var buf bytes.Buffer
	w := recordio.NewWriter(&buf, recordio.WithCompressor(recordio.None), recordio.WithMaxChunkBytes(8))
	for range chunks {
		if err := w.Write([]byte("record!!")); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	for i := range files {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%05d.rio", i)), buf.Bytes(), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return filepath.Join(dir, "*.rio")
}

// benchBuild times build over the files of pattern, which hold chunks chunks
// in all, and reports the time per chunk and the rate.
func benchBuild(b *testing.B, cfg Config, pattern string, chunks, workers int) {
	for b.Loop() {
		ds, err := build(cfg, []string{pattern}, 10, workers)
		if err != nil {
			b.Fatal(err)
		}
		if ds.NumChunks() != chunks {
			b.Fatalf("%d chunks, want %d", ds.NumChunks(), chunks)
		}
	}
	perChunk := float64(b.Elapsed().Nanoseconds()) / float64(b.N*chunks)
	b.ReportMetric(perChunk, "ns/chunk")
	b.ReportMetric(1e9/perChunk, "chunks/s")
}

// BenchmarkBuild10000Files indexes 10,000 files of 10 chunks one file at a
// time and with Build's default number of workers, and with the default
// workers under a dataset root (which resolves each file's links and opens
// it through an os.Root). The files are written once
// (the sub-benchmarks share them) and stay in the page cache, so this measures
// system calls, not the disk. The time includes Expand, which globs and stats
// every file one after the other.
func BenchmarkBuild10000Files(b *testing.B) {
	const files, chunks = 10000, 10
	pattern := writeBenchFiles(b, files, chunks)
	for _, workers := range []int{1, defaultWorkers()} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			benchBuild(b, Config{}, pattern, files*chunks, workers)
		})
	}
	b.Run(fmt.Sprintf("root/workers=%d", defaultWorkers()), func(b *testing.B) {
		benchBuild(b, Config{Root: filepath.Dir(pattern)}, pattern, files*chunks, defaultWorkers())
	})
}

// BenchmarkBuildSameChunks indexes 100,000 chunks spread over 100 to 10,000
// files with the default workers. The time per chunk stays about the same
// while files hold 100 chunks or more; at 10 a file, what a file costs on top
// of its chunks (open, stat, close) shows.
func BenchmarkBuildSameChunks(b *testing.B) {
	const total = 100000
	for _, files := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("files=%d/chunks=%d", files, total/files), func(b *testing.B) {
			pattern := writeBenchFiles(b, files, total/files)
			benchBuild(b, Config{}, pattern, total, defaultWorkers())
		})
	}
}
