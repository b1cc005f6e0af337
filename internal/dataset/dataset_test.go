package dataset

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/trainmaster/master/go/recordio"
)

// writeVariedFiles writes n RecordIO files to dir and returns the glob
// matching them. File i holds 0 to 29 records (some files none, so no chunk;
// some records empty) in chunks of 1 to 7 records, with each compressor.
func writeVariedFiles(t testing.TB, dir string, n int) string {
	t.Helper()
	compressors := []recordio.Compressor{recordio.None, recordio.Snappy, recordio.Gzip}
	for i := range n {
		records := (i * 7) % 30
		record := func(r int) []byte {
			if (i+r)%11 == 0 {
				return nil
			}
			return fmt.Appendf(nil, "f%04d-r%02d", i, r) // 9 bytes
		}
		perChunk := 1 + i%7
		path := filepath.Join(dir, fmt.Sprintf("f%04d.rio", i))
		if err := recordio.WriteFile(path, records, record,
			recordio.WithCompressor(compressors[i%3]), recordio.WithMaxChunkBytes(9*perChunk)); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "f*.rio")
}

// sequentialBuild is what Build must equal: the files indexed one by one, in
// the order Expand gives.
func sequentialBuild(t *testing.T, patterns []string, chunksPerTask int) *Dataset {
	t.Helper()
	files, err := Expand(patterns)
	if err != nil {
		t.Fatal(err)
	}
	want := &Dataset{Patterns: patterns, Files: files, ChunksPerTask: chunksPerTask}
	for fi, path := range files {
		ix, err := recordio.IndexFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for ci, c := range ix.Chunks {
			want.chunks = append(want.chunks, Chunk{Offset: c.Offset, File: int32(fi), Idx: int32(ci), NumRecords: int64(c.NumRecords)})
			want.records += int64(c.NumRecords)
		}
	}
	return want
}

func TestBuildMatchesSequential(t *testing.T) {
	patterns := []string{writeVariedFiles(t, t.TempDir(), 300)}
	want := sequentialBuild(t, patterns, 4)
	if len(want.Files) != 300 || len(want.chunks) < 600 {
		t.Fatalf("the sample has %d files and %d chunks, want 300 and many", len(want.Files), len(want.chunks))
	}
	for _, workers := range []int{1, 2, defaultWorkers(), 64} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			got, err := build(Config{}, patterns, 4, workers)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("got %d files, %d chunks, %d records; want %d, %d, %d (or same counts, different chunks)",
					len(got.Files), len(got.chunks), got.records, len(want.Files), len(want.chunks), want.records)
			}
		})
	}
	got, err := Build(patterns, 4)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("Build differs from the sequential index (error %v)", err)
	}
}

func TestBuildNoChunks(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"a.rio", "b.rio"} {
		if err := recordio.WriteFile(filepath.Join(dir, name), 0, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Build([]string{filepath.Join(dir, "*.rio")}, 1); err == nil || !strings.Contains(err.Error(), "2 files") {
		t.Fatalf("error %v, want one saying 2 files hold no chunk", err)
	}
}

// TestBuildReportsFirstBadFile damages several files and checks that, however
// the workers are scheduled, the error is the one the sequential loop meets:
// that of the lowest-indexed bad file, wrapped as Build always did.
func TestBuildReportsFirstBadFile(t *testing.T) {
	template := t.TempDir()
	writeVariedFiles(t, template, 300)
	for _, tc := range []struct {
		name               string
		truncated, garbage []int // files to damage
		first              int   // the lowest of them
		want               error
	}{
		{"truncated before garbage", []int{40, 200}, []int{41, 299}, 40, recordio.ErrTruncated},
		{"garbage before truncated", []int{152, 299}, []int{151}, 151, recordio.ErrBadMagic},
		{"first file", []int{1, 298}, []int{0}, 0, recordio.ErrBadMagic},
		{"last file only", []int{299}, nil, 299, recordio.ErrTruncated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.CopyFS(dir, os.DirFS(template)); err != nil {
				t.Fatal(err)
			}
			pattern := filepath.Join(dir, "f*.rio")
			files, err := Expand([]string{pattern})
			if err != nil {
				t.Fatal(err)
			}
			for _, i := range tc.truncated {
				truncate(t, files[i])
			}
			for _, i := range tc.garbage {
				if err := os.WriteFile(files[i], []byte("this is not a RecordIO file at all"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, seqErr := recordio.IndexFile(files[tc.first])
			if !errors.Is(seqErr, tc.want) {
				t.Fatalf("the first bad file's own error is %v, want %v", seqErr, tc.want)
			}
			want := "dataset: " + seqErr.Error()
			for _, workers := range []int{1, 3, defaultWorkers(), 64} {
				for range 5 {
					checkBuildError(t, pattern, workers, files[tc.first], want, tc.want)
				}
			}
		})
	}
}

// truncate cuts the last byte of path, in the payload of its last chunk.
func truncate(t *testing.T, path string) {
	t.Helper()
	ix, err := recordio.IndexFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(ix.Chunks) == 0 {
		t.Fatalf("%s has no chunk to truncate", path)
	}
	if err := os.Truncate(path, ix.Size-1); err != nil {
		t.Fatal(err)
	}
}

func checkBuildError(t *testing.T, pattern string, workers int, badPath, want string, class error) {
	t.Helper()
	before := runtime.NumGoroutine()
	_, err := build(Config{}, []string{pattern}, 4, workers)
	var ce *recordio.Error
	if err == nil || err.Error() != want || !errors.Is(err, class) || !errors.As(err, &ce) || ce.Path != badPath {
		t.Fatalf("workers=%d: error %v, want %q", workers, err, want)
	}
	waitGoroutines(t, before)
}

// waitGoroutines fails if more than n goroutines are still running after a
// moment: the workers' last instructions after they signal their end may
// still be running when build returns, nothing more.
func waitGoroutines(t *testing.T, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines still running, want %d", runtime.NumGoroutine(), n)
		}
	}
}

// TestBuildErrorsShowNoContent reports a file that is not RecordIO, as a
// trainer might report /etc/shadow: the error must say where and what is
// wrong, and nothing of what the file holds.
func TestBuildErrorsShowNoContent(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "shadow")
	content := "root:$6$salt$hash:19000:0:99999:7:::\n"
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []Config{{}, {Root: dir}} {
		_, err := BuildWith(cfg, []string{path}, 1)
		if !errors.Is(err, recordio.ErrBadMagic) {
			t.Fatalf("root %q: error %v, want bad magic", cfg.Root, err)
		}
		msg := strings.ReplaceAll(err.Error(), path, "PATH")
		if want := "dataset: recordio: PATH: chunk 0 at offset 0: bad magic: not a RecordIO file"; msg != want {
			t.Fatalf("root %q: error %q, want %q", cfg.Root, msg, want)
		}
	}
}
