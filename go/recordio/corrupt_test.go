package recordio

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// sampleFile returns a file of 4 chunks of 10 records each.
func sampleFile(t *testing.T, c Compressor) []byte {
	t.Helper()
	var records [][]byte
	for i := range 40 {
		records = append(records, []byte(fmt.Sprintf("record number %03d, padded to compress well........", i)))
	}
	data := writeAll(t, records, WithCompressor(c), WithMaxChunkBytes(10*len(records[0])))
	if _, chunks := readAll(t, data); chunks != 4 {
		t.Fatalf("sample has %d chunks, want 4", chunks)
	}
	return data
}

func chunkOffset(t *testing.T, data []byte, chunk int) int64 {
	t.Helper()
	ix, err := ScanIndex(bytes.NewReader(data), int64(len(data)), "mem")
	if err != nil {
		t.Fatal(err)
	}
	return ix.Chunks[chunk].Offset
}

// rewritePayload replaces the stored payload of the chunk at off, fixing its
// size and checksum so that only the payload's content is wrong.
func rewritePayload(data []byte, off int64, payload []byte) []byte {
	size := binary.LittleEndian.Uint32(data[off+12:])
	end := off + headerSize + int64(size)
	out := append([]byte(nil), data[:off+headerSize]...)
	binary.LittleEndian.PutUint32(out[off+4:], crc32.ChecksumIEEE(payload))
	binary.LittleEndian.PutUint32(out[off+12:], uint32(len(payload)))
	out = append(out, payload...)
	return append(out, data[end:]...)
}

func payloadOf(data []byte, off int64) []byte {
	size := binary.LittleEndian.Uint32(data[off+12:])
	return append([]byte(nil), data[off+headerSize:off+headerSize+int64(size)]...)
}

func TestCorruption(t *testing.T) {
	const bad = 2 // the chunk every case damages
	for _, tc := range []struct {
		name       string
		compressor Compressor
		damage     func(data []byte, off int64) []byte
		want       error
		byIndex    bool // the header scan already sees it
	}{
		{"bad magic", None, func(d []byte, off int64) []byte { d[off] ^= 0xff; return d }, ErrBadMagic, true},
		{"truncated header", None, func(d []byte, off int64) []byte { return d[:off+7] }, ErrTruncated, true},
		{"truncated payload", Snappy, func(d []byte, off int64) []byte { return d[:off+headerSize+5] }, ErrTruncated, true},
		{"payload size past the end", None, func(d []byte, off int64) []byte {
			binary.LittleEndian.PutUint32(d[off+12:], 0xfffffff0)
			return d
		}, ErrTruncated, true},
		{"unknown compressor", None, func(d []byte, off int64) []byte { d[off+8] = 7; return d }, ErrCompressor, true},
		{"checksum mismatch", Gzip, func(d []byte, off int64) []byte { d[off+headerSize+10] ^= 1; return d }, ErrChecksum, false},
		{"record length past the payload", None, func(d []byte, off int64) []byte {
			p := payloadOf(d, off)
			binary.LittleEndian.PutUint32(p, uint32(len(p))) // the first record claims it all
			return rewritePayload(d, off, p)
		}, ErrRecordLength, false},
		{"more records claimed than stored", None, func(d []byte, off int64) []byte {
			binary.LittleEndian.PutUint32(d[off+16:], 11)
			return d
		}, ErrRecordCount, false},
		{"fewer records claimed than stored", Snappy, func(d []byte, off int64) []byte {
			binary.LittleEndian.PutUint32(d[off+16:], 9)
			return d
		}, ErrRecordCount, false},
		{"snappy stream damaged", Snappy, func(d []byte, off int64) []byte {
			p := payloadOf(d, off)
			p[len(p)-3] ^= 0x55
			return rewritePayload(d, off, p)
		}, ErrDecompress, false},
		{"snappy identifier missing", Snappy, func(d []byte, off int64) []byte {
			return rewritePayload(d, off, payloadOf(d, off)[len(streamIdentifier):])
		}, ErrDecompress, false},
		{"gzip stream damaged", Gzip, func(d []byte, off int64) []byte {
			p := payloadOf(d, off)
			return rewritePayload(d, off, p[:len(p)-6])
		}, ErrDecompress, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := sampleFile(t, tc.compressor)
			off := chunkOffset(t, data, bad)
			path := filepath.Join(t.TempDir(), "damaged.recordio")
			if err := os.WriteFile(path, tc.damage(data, off), 0o644); err != nil {
				t.Fatal(err)
			}

			_, err := IndexFile(path)
			if tc.byIndex {
				checkChunkError(t, err, tc.want, path, bad, off)
				return
			}
			if err != nil {
				t.Fatalf("index: %v", err)
			}
			s, err := ScanFiles(path)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			n := 0
			for s.Scan() {
				n++
			}
			if n != 10*bad {
				t.Fatalf("scanned %d records before the damaged chunk, want %d", n, 10*bad)
			}
			checkChunkError(t, s.Err(), tc.want, path, bad, off)
		})
	}
}

func checkChunkError(t *testing.T, err, want error, path string, chunk int, off int64) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("error %v, want %v", err, want)
	}
	var ce *Error
	if !errors.As(err, &ce) || ce.Path != path || ce.Chunk != chunk || ce.Offset != off {
		t.Fatalf("error %#v does not locate chunk %d at offset %d of %s", err, chunk, off, path)
	}
	msg := err.Error()
	for _, part := range []string{path, fmt.Sprintf("chunk %d", chunk), fmt.Sprintf("offset %d", off), want.Error()} {
		if !strings.Contains(msg, part) {
			t.Fatalf("error %q does not say %q", msg, part)
		}
	}
}

// TestHugeClaimsAllocateLittle checks that a header claiming gigabytes does not
// make the reader allocate them.
func TestHugeClaimsAllocateLittle(t *testing.T) {
	for _, c := range []Compressor{None, Snappy, Gzip} {
		var hdr [headerSize]byte
		header{compressor: c, payloadSize: 0xffffffff, numRecords: 0xffffffff}.encode(hdr[:])
		data := append(hdr[:], make([]byte, 64)...)
		before := totalAlloc()
		r := NewReader(bytes.NewReader(data), int64(len(data)), "huge")
		if _, _, err := r.ReadChunk(0, 0); !errors.Is(err, ErrTruncated) {
			t.Fatalf("%v: error %v, want truncated", c, err)
		}
		if _, err := ScanIndex(bytes.NewReader(data), int64(len(data)), "huge"); !errors.Is(err, ErrTruncated) {
			t.Fatalf("%v: index error %v, want truncated", c, err)
		}
		if grown := totalAlloc() - before; grown > 1<<20 {
			t.Fatalf("%v: allocated %d bytes for an 84-byte file", c, grown)
		}
	}

	// A payload that is really there, claiming four billion records.
	payload := make([]byte, 64)
	var hdr [headerSize]byte
	header{checksum: crc32.ChecksumIEEE(payload), compressor: None, payloadSize: 64, numRecords: 0xffffffff}.encode(hdr[:])
	data := append(hdr[:], payload...)
	before := totalAlloc()
	r := NewReader(bytes.NewReader(data), int64(len(data)), "many")
	if _, _, err := r.ReadChunk(0, 0); !errors.Is(err, ErrRecordCount) {
		t.Fatalf("error %v, want record count mismatch", err)
	}
	if grown := totalAlloc() - before; grown > 1<<20 {
		t.Fatalf("allocated %d bytes for a chunk of 16 records", grown)
	}
}

func totalAlloc() uint64 {
	var s runtime.MemStats
	runtime.ReadMemStats(&s)
	return s.TotalAlloc
}

// TestErrorsShowNoContent indexes files that are not RecordIO, or are
// RecordIO followed by something else, and checks that the error locates the
// problem without showing any byte of what it found: errors reach whoever
// named the file, who may not read it.
func TestErrorsShowNoContent(t *testing.T) {
	secret := []byte("root:$6$hashedpassword:19000:0:99999:7:::\n")
	valid := writeAll(t, [][]byte{[]byte("one record")})
	var badCompressor [headerSize]byte
	header{compressor: Compressor(binary.LittleEndian.Uint32(secret)), payloadSize: 0}.encode(badCompressor[:])
	for _, tc := range []struct {
		name   string
		data   []byte
		hidden []byte // the bytes no error may show, in any form
		want   error
		chunk  int
		offset int64
		says   string
	}{
		{"text file", secret, secret, ErrBadMagic, 0, 0, "not a RecordIO file"},
		{"text after a chunk", append(bytes.Clone(valid), secret...), secret, ErrBadMagic, 1, int64(len(valid)), "the file is damaged from here"},
		{"compressor field", badCompressor[:], secret[:4], ErrCompressor, 0, 0, "not 0 (none), 1 (snappy) or 2 (gzip)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "file")
			if err := os.WriteFile(path, tc.data, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := IndexFile(path)
			checkChunkError(t, err, tc.want, path, tc.chunk, tc.offset)
			if !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("error %q does not say %q", err, tc.says)
			}
			// The path is left out: its random part may hold digits that
			// happen to match.
			if shown := showsContent(strings.ReplaceAll(err.Error(), path, "PATH"), tc.hidden); shown != "" {
				t.Fatalf("error %q shows the file's bytes as %q", err, shown)
			}
		})
	}
}

// showsContent returns how msg shows part of content, or "": a run of 4 of
// its bytes as text, or a 32-bit word of it (either byte order) in decimal
// or hex, the forms a header field is printed in.
func showsContent(msg string, content []byte) string {
	lower := strings.ToLower(msg)
	for i := 0; i+4 <= len(content); i++ {
		w := content[i : i+4]
		forms := []string{string(w)}
		for _, v := range []uint32{binary.LittleEndian.Uint32(w), binary.BigEndian.Uint32(w)} {
			forms = append(forms, fmt.Sprintf("%d", v), fmt.Sprintf("%x", v))
		}
		for _, f := range forms {
			if strings.Contains(lower, strings.ToLower(f)) {
				return f
			}
		}
	}
	return ""
}
