package recordio

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.NewReplacer(" ", "", "|", "").Replace(s))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// writeAll writes records with the given options and returns the file bytes.
func writeAll(t testing.TB, records [][]byte, opts ...WriterOption) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := NewWriter(&buf, opts...)
	for _, r := range records {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// readAll indexes data and reads every record of every chunk.
func readAll(t testing.TB, data []byte) (records [][]byte, chunks int) {
	t.Helper()
	ix, err := ScanIndex(bytes.NewReader(data), int64(len(data)), "mem")
	if err != nil {
		t.Fatal(err)
	}
	r := NewReader(bytes.NewReader(data), int64(len(data)), "mem")
	for i, c := range ix.Chunks {
		recs, _, err := r.ReadChunk(i, c.Offset)
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range recs {
			records = append(records, bytes.Clone(rec))
		}
	}
	if len(records) != ix.NumRecords {
		t.Fatalf("index counts %d records, chunks hold %d", ix.NumRecords, len(records))
	}
	return records, len(ix.Chunks)
}

func TestVectors(t *testing.T) {
	records := [][]byte{[]byte("a"), []byte("bc")}
	for _, tc := range []struct {
		c    Compressor
		want string
	}{
		{None, "04030201 b1b17049 00000000 0b000000 02000000 | 01000000 61 02000000 6263"},
		{Snappy, "04030201 559cd055 01000000 1d000000 02000000 | ff060000 734e61507059 01 0f0000 f023991b 01000000 61 02000000 6263"},
	} {
		t.Run(tc.c.String(), func(t *testing.T) {
			want := unhex(t, tc.want)
			got := writeAll(t, records, WithCompressor(tc.c))
			if !bytes.Equal(got, want) {
				t.Fatalf("wrote\n%x\nwant\n%x", got, want)
			}
			back, chunks := readAll(t, want)
			if chunks != 1 || len(back) != 2 || string(back[0]) != "a" || string(back[1]) != "bc" {
				t.Fatalf("read back %q in %d chunks", back, chunks)
			}
		})
	}
}

func TestRoundTripEveryCompressor(t *testing.T) {
	var records [][]byte
	for i := range 3000 {
		records = append(records, bytes.Repeat([]byte{byte(i)}, i%97))
	}
	records = append(records, make([]byte, 200<<10)) // bigger than a chunk and a snappy frame
	for _, c := range []Compressor{None, Snappy, Gzip} {
		t.Run(c.String(), func(t *testing.T) {
			data := writeAll(t, records, WithCompressor(c), WithMaxChunkBytes(8<<10))
			back, chunks := readAll(t, data)
			if len(back) != len(records) {
				t.Fatalf("read %d records, wrote %d", len(back), len(records))
			}
			for i := range records {
				if !bytes.Equal(back[i], records[i]) {
					t.Fatalf("record %d differs", i)
				}
			}
			if chunks < 10 {
				t.Fatalf("%d chunks: the 8 KiB limit was not applied", chunks)
			}
		})
	}
}

func TestChunkBoundaries(t *testing.T) {
	rec := func(n int) []byte { return make([]byte, n) }
	for _, tc := range []struct {
		name    string
		records [][]byte
		limit   int
		want    []uint32 // records per chunk
	}{
		{"fits exactly", [][]byte{rec(5), rec(5)}, 10, []uint32{2}},
		{"one byte over", [][]byte{rec(5), rec(6)}, 10, []uint32{1, 1}},
		{"oversized record alone", [][]byte{rec(3), rec(30), rec(3)}, 10, []uint32{1, 1, 1}},
		{"empty records are free", [][]byte{rec(10), rec(0), rec(0), rec(1)}, 10, []uint32{3, 1}},
		{"nothing written", nil, 10, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := writeAll(t, tc.records, WithCompressor(None), WithMaxChunkBytes(tc.limit))
			ix, err := ScanIndex(bytes.NewReader(data), int64(len(data)), "mem")
			if err != nil {
				t.Fatal(err)
			}
			var got []uint32
			for _, c := range ix.Chunks {
				got = append(got, c.NumRecords)
			}
			if !slicesEqual(got, tc.want) {
				t.Fatalf("records per chunk %v, want %v", got, tc.want)
			}
		})
	}
}

func slicesEqual(a, b []uint32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

type manifestEntry struct {
	name    string
	records int
	chunks  int
	digest  string
}

func readManifest(t *testing.T, dir string) []manifestEntry {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "MANIFEST"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var entries []manifestEntry
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 4 {
			t.Fatalf("MANIFEST line %q", sc.Text())
		}
		records, err1 := strconv.Atoi(fields[1])
		chunks, err2 := strconv.Atoi(fields[2])
		if err1 != nil || err2 != nil {
			t.Fatalf("MANIFEST line %q", sc.Text())
		}
		entries = append(entries, manifestEntry{fields[0], records, chunks, fields[3]})
	}
	if len(entries) == 0 {
		t.Fatal("empty MANIFEST")
	}
	return entries
}

// digest is the MANIFEST's: SHA-256 over each record as length + bytes.
func digest(records [][]byte) string {
	h := sha256.New()
	for _, r := range records {
		h.Write(binary.LittleEndian.AppendUint32(nil, uint32(len(r))))
		h.Write(r)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// fixtureDirs are the reference files shipped in testdata and, when the
// checkout has it beside it, the shared originals.
func fixtureDirs() []string {
	dirs := []string{"testdata"}
	if _, err := os.Stat("../../../shared/fixtures/recordio/MANIFEST"); err == nil {
		dirs = append(dirs, "../../../shared/fixtures/recordio")
	}
	return dirs
}

func TestReferenceFixtures(t *testing.T) {
	for _, dir := range fixtureDirs() {
		for _, e := range readManifest(t, dir) {
			t.Run(dir+"/"+e.name, func(t *testing.T) {
				path := filepath.Join(dir, e.name)
				ix, err := IndexFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if len(ix.Chunks) != e.chunks || ix.NumRecords != e.records {
					t.Fatalf("index: %d chunks %d records, MANIFEST says %d and %d", len(ix.Chunks), ix.NumRecords, e.chunks, e.records)
				}
				s, err := ScanFiles(path)
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				var records [][]byte
				for s.Scan() {
					records = append(records, bytes.Clone(s.Record()))
				}
				if err := s.Err(); err != nil {
					t.Fatal(err)
				}
				if len(records) != e.records || digest(records) != e.digest {
					t.Fatalf("%d records with digest %s, MANIFEST says %d and %s", len(records), digest(records), e.records, e.digest)
				}
			})
		}
	}
}

// TestRewriteMatchesReference writes the fixtures' records again with the
// reference writer's settings (4 KiB chunks) and expects the same bytes.
func TestRewriteMatchesReference(t *testing.T) {
	for _, tc := range []struct {
		file  string
		c     Compressor
		limit int // 0: derive it from the file
	}{
		{"plain.recordio", None, 4096},
		{"snappy.recordio", Snappy, 4096},
		{"empty-records.recordio", None, 0},
	} {
		t.Run(tc.file, func(t *testing.T) {
			want, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			records, _ := readAll(t, want)
			limit := tc.limit
			if limit == 0 {
				ix, err := ScanIndex(bytes.NewReader(want), int64(len(want)), tc.file)
				if err != nil {
					t.Fatal(err)
				}
				limit = referenceLimit(records, ix)
			}
			got := writeAll(t, records, WithCompressor(tc.c), WithMaxChunkBytes(limit))
			if !bytes.Equal(got, want) {
				t.Fatalf("rewrite with a %d-byte limit differs from the reference file (%d vs %d bytes)", limit, len(got), len(want))
			}
		})
	}
}

// referenceLimit is the largest chunk's record bytes: the smallest limit
// that can reproduce the file's chunk boundaries, for a fixture whose limit
// the README does not give.
func referenceLimit(records [][]byte, ix *Index) int {
	limit, i := 0, 0
	for _, c := range ix.Chunks {
		n := 0
		for range c.NumRecords {
			n += len(records[i])
			i++
		}
		limit = max(limit, n)
	}
	return limit
}

func TestWriteFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.recordio")
	if err := WriteFile(path, 100, func(i int) []byte { return []byte(strconv.Itoa(i)) }, WithMaxChunkBytes(20)); err != nil {
		t.Fatal(err)
	}
	ix, err := IndexFile(path)
	if err != nil || ix.NumRecords != 100 || len(ix.Chunks) < 5 {
		t.Fatalf("%v, %+v", err, ix)
	}
	if err := WriteFile(filepath.Join(t.TempDir(), "no", "dir"), 1, func(int) []byte { return nil }); err == nil {
		t.Fatal("wrote into a missing directory")
	}
}
