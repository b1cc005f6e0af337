package recordio

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// writeFile writes n records "<name>-<i>" in chunks of perChunk records.
func writeFile(t *testing.T, dir, name string, n, perChunk int) string {
	t.Helper()
	path := filepath.Join(dir, name)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := NewWriter(f, WithMaxChunkBytes(perChunk*len(name+"-000")))
	for i := range n {
		if err := w.Write(fmt.Appendf(nil, "%s-%03d", name, i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func collect(t *testing.T, s *Scanner) []string {
	t.Helper()
	defer s.Close()
	var got []string
	for s.Scan() {
		got = append(got, string(s.Record()))
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return got
}

func TestScanRecordsWindows(t *testing.T) {
	path := writeFile(t, t.TempDir(), "f", 100, 7) // 15 chunks: 14 of 7, one of 2
	ix, err := IndexFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(ix.Chunks) != 15 {
		t.Fatalf("%d chunks, want 15", len(ix.Chunks))
	}
	for _, tc := range []struct{ first, count, wantFirst, wantLen int }{
		{0, 100, 0, 100},
		{0, 1, 0, 1},
		{7, 7, 7, 7},    // exactly one chunk
		{6, 9, 6, 9},    // straddles three chunks
		{95, 50, 95, 5}, // runs past the end
		{99, 1, 99, 1},
		{100, 5, 0, 0},
		{10, 0, 0, 0},
	} {
		t.Run(fmt.Sprintf("%d+%d", tc.first, tc.count), func(t *testing.T) {
			got := collect(t, ScanRecords(ix, tc.first, tc.count))
			if len(got) != tc.wantLen {
				t.Fatalf("%d records, want %d", len(got), tc.wantLen)
			}
			for i, rec := range got {
				if want := fmt.Sprintf("f-%03d", tc.wantFirst+i); rec != want {
					t.Fatalf("record %d is %q, want %q", i, rec, want)
				}
			}
		})
	}
}

func TestScanAcrossFilesAndChunkRanges(t *testing.T) {
	dir := t.TempDir()
	a := writeFile(t, dir, "a", 20, 5)
	b := writeFile(t, dir, "b", 3, 5)
	s, err := ScanFiles(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if got := collect(t, s); len(got) != 23 || got[0] != "a-000" || got[19] != "a-019" || got[20] != "b-000" {
		t.Fatalf("scanned %q", got)
	}

	ixA, _ := IndexFile(a)
	ixB, _ := IndexFile(b)
	refs := append(ixA.Refs(2, 4), ixB.Refs(0, 1)...)
	refs = append(refs, ixA.Refs(0, 1)...) // back to the first file
	got := collect(t, NewScanner(refs))
	want := []string{"a-010", "a-014", "a-015", "a-019", "b-000", "b-002", "a-000", "a-004"}
	for i, j := range []int{0, 4, 5, 9, 10, 12, 13, 17} {
		if got[j] != want[i] {
			t.Fatalf("record %d is %q, want %q (all: %q)", j, got[j], want[i], got)
		}
	}
	if len(got) != 18 {
		t.Fatalf("%d records, want 18", len(got))
	}
}

func TestScanMissingFile(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "gone.recordio")
	if _, err := ScanFiles(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("error %v, want not exist", err)
	}
	s := NewScanner([]ChunkRef{{Path: missing}})
	if s.Scan() || !errors.Is(s.Err(), fs.ErrNotExist) {
		t.Fatalf("error %v, want not exist", s.Err())
	}
}
