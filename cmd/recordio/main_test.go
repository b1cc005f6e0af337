package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// runCmd runs the tool in-process and returns its exit status and output.
func runCmd(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestWriteCatRoundTrip(t *testing.T) {
	dir := t.TempDir()
	lines := "first\n\nthird record\nno newline at the end"
	for _, c := range []string{"none", "snappy", "gzip"} {
		t.Run(c, func(t *testing.T) {
			path := filepath.Join(dir, c+".rio")
			if code, _, stderr := runCmd(t, lines, "write", "-o", path, "-compressor", c, "-max-chunk-bytes", "8"); code != 0 {
				t.Fatalf("write: %d %s", code, stderr)
			}
			code, stdout, stderr := runCmd(t, "", "cat", path)
			if code != 0 || stdout != lines+"\n" {
				t.Fatalf("cat: %d %q %s", code, stdout, stderr)
			}
			code, stdout, _ = runCmd(t, "", "stat", "-json", path)
			var st fileStat
			if code != 0 || json.Unmarshal([]byte(stdout), &st) != nil || st.Records != 4 || st.Chunks != 3 || st.Path != path {
				t.Fatalf("stat: %d %q", code, stdout)
			}
		})
	}
}

// TestGenerate: -generate writes its numbered records, stdin unread.
func TestGenerate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "g.rio")
	if code, _, stderr := runCmd(t, "ignored\n", "write", "-o", path, "-generate", "3", "-max-chunk-bytes", "16"); code != 0 {
		t.Fatalf("write: %d %s", code, stderr)
	}
	code, stdout, stderr := runCmd(t, "", "cat", path)
	if code != 0 || stdout != "record 00000000\nrecord 00000001\nrecord 00000002\n" {
		t.Fatalf("cat: %d %q %s", code, stdout, stderr)
	}
}

func TestFramedRoundTrip(t *testing.T) {
	var in bytes.Buffer
	records := []string{"with\nnewline", "", strings.Repeat("x", 3<<20)}
	for _, r := range records {
		in.Write(binary.LittleEndian.AppendUint32(nil, uint32(len(r))))
		in.WriteString(r)
	}
	path := filepath.Join(t.TempDir(), "framed.rio")
	if code, _, stderr := runCmd(t, in.String(), "write", "-framed", "-o", path); code != 0 {
		t.Fatalf("write: %s", stderr)
	}
	code, stdout, stderr := runCmd(t, "", "cat", "-framed", path)
	if code != 0 || stdout != in.String() {
		t.Fatalf("cat -framed: %d, %d bytes, %s", code, len(stdout), stderr)
	}
}

func TestWriteLeavesNothingOnBadInput(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cut.rio")
	code, _, stderr := runCmd(t, "\x10\x00\x00\x00abc", "write", "-framed", "-o", path)
	if code != 1 || !strings.Contains(stderr, "stdin record 0: 3 of 16 bytes") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 0 {
		t.Fatalf("left %v behind", entries)
	}
}

func TestStatAndVerifyFixturesByGlob(t *testing.T) {
	code, stdout, stderr := runCmd(t, "", "stat", "../../go/recordio/testdata/*.recordio")
	if code != 0 || strings.Count(stdout, "\n") != 4 || !strings.Contains(stdout, "plain.recordio\t1000 records\t8 chunks") {
		t.Fatalf("stat: %d %q %s", code, stdout, stderr)
	}
	code, stdout, stderr = runCmd(t, "", "verify", "../../go/recordio/testdata/*.recordio")
	if code != 0 || strings.Count(stdout, ": ok, ") != 4 {
		t.Fatalf("verify: %d %q %s", code, stdout, stderr)
	}
}

func TestVerifyReportsEveryBadChunk(t *testing.T) {
	data, err := os.ReadFile("../../go/recordio/testdata/plain.recordio")
	if err != nil {
		t.Fatal(err)
	}
	// Damage the payloads of chunks 1 and 3; their headers stay intact.
	offsets := chunkOffsets(data)
	data[offsets[1]+30] ^= 1
	data[offsets[3]+30] ^= 1
	path := filepath.Join(t.TempDir(), "bad.rio")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCmd(t, "", "verify", path)
	if code != 1 || stdout != "" {
		t.Fatalf("exit %d, stdout %q", code, stdout)
	}
	for _, want := range []string{
		path + ": chunk 1 at offset " + strconv.Itoa(offsets[1]) + ": checksum mismatch",
		path + ": chunk 3 at offset " + strconv.Itoa(offsets[3]) + ": checksum mismatch",
	} {
		if !strings.Contains(stderr, want) {
			t.Fatalf("stderr %q lacks %q", stderr, want)
		}
	}
	if strings.Count(stderr, "\n") != 2 {
		t.Fatalf("stderr %q: want exactly two problems", stderr)
	}
}

func chunkOffsets(data []byte) []int {
	var offs []int
	for off := 0; off < len(data); off += 20 + int(binary.LittleEndian.Uint32(data[off+12:])) {
		offs = append(offs, off)
	}
	return offs
}

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{nil, 2, "usage: recordio"},
		{[]string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{[]string{"write"}, 2, "-o FILE is required"},
		{[]string{"write", "-o", "x", "-compressor", "lz4"}, 2, `unknown compressor "lz4"`},
		{[]string{"write", "-o", "x", "-max-chunk-bytes", "0"}, 2, "must be positive"},
		{[]string{"write", "-o", "x", "-generate", "-1"}, 2, "-generate must not be negative"},
		{[]string{"write", "-o", "x", "-generate", "3", "-framed"}, 2, "no -framed"},
		{[]string{"cat"}, 2, "no FILE given"},
		{[]string{"cat", "/no/such/file.rio"}, 1, `"/no/such/file.rio": no such file`},
		{[]string{"stat", "/no/such/*.rio"}, 1, `pattern "/no/such/*.rio" matches no file`},
		{[]string{"verify", "-bogus", "f"}, 2, "flag provided but not defined: -bogus"},
	} {
		code, _, stderr := runCmd(t, "", tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("recordio %q: exit %d, stderr %q; want %d and %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
}

// TestArgumentOrder checks that cat, stat and verify take the files in the
// order given: a file named explicitly where it is named (twice if named
// twice), a glob's matches sorted.
func TestArgumentOrder(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"a", "b", "c"} {
		path := filepath.Join(dir, name+".rio")
		if code, _, stderr := runCmd(t, name+"1\n"+name+"2\n", "write", "-o", path); code != 0 {
			t.Fatalf("write: %s", stderr)
		}
	}
	j := func(name string) string { return filepath.Join(dir, name) }
	for _, tc := range []struct {
		name  string
		args  []string
		order string // the files' names in the order their output must come
	}{
		{"explicit, reverse", []string{j("c.rio"), j("a.rio")}, "ca"},
		{"explicit, sorted", []string{j("a.rio"), j("b.rio")}, "ab"},
		{"glob", []string{j("*.rio")}, "abc"},
		{"explicit then glob", []string{j("c.rio"), j("[ab].rio")}, "cab"},
		{"named twice", []string{j("b.rio"), j("a.rio"), j("b.rio")}, "bab"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cat, stat, verify strings.Builder
			for _, f := range tc.order {
				path := j(string(f) + ".rio")
				fmt.Fprintf(&cat, "%c1\n%c2\n", f, f)
				fmt.Fprintf(&stat, "%s\t2 records\t1 chunks\t", path)
				fmt.Fprintf(&verify, "%s: ok, 2 records in 1 chunks\n", path)
			}
			if code, stdout, stderr := runCmd(t, "", append([]string{"cat"}, tc.args...)...); code != 0 || stdout != cat.String() {
				t.Fatalf("cat: %d %q %s; want %q", code, stdout, stderr, cat.String())
			}
			code, stdout, stderr := runCmd(t, "", append([]string{"stat"}, tc.args...)...)
			if got := statOrder(stdout); code != 0 || got != stat.String() {
				t.Fatalf("stat: %d %q %s; want %q", code, got, stderr, stat.String())
			}
			if code, stdout, stderr := runCmd(t, "", append([]string{"verify"}, tc.args...)...); code != 0 || stdout != verify.String() {
				t.Fatalf("verify: %d %q %s; want %q", code, stdout, stderr, verify.String())
			}
		})
	}
}

// statOrder drops the byte counts of stat's lines, which depend on the
// compressor, keeping each line up to them.
func statOrder(stdout string) string {
	var b strings.Builder
	for line := range strings.Lines(stdout) {
		b.WriteString(line[:strings.LastIndexByte(line, '\t')+1])
	}
	return b.String()
}
