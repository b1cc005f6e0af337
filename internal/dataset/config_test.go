package dataset

import (
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestQuote(t *testing.T) {
	long := strings.Repeat("a", 16<<20)
	for _, tc := range []struct {
		name, in, want string
	}{
		{"empty", "", `""`},
		{"short", "/data/*.rio", `"/data/*.rio"`},
		{"control characters escaped", "a\nb\x00", `"a\nb\x00"`},
		{"exactly the limit", strings.Repeat("x", QuoteBytes), strconv.Quote(strings.Repeat("x", QuoteBytes))},
		{"one byte over", strings.Repeat("x", QuoteBytes+1), strconv.Quote(strings.Repeat("x", QuoteBytes)) + "... (201 bytes)"},
		{"16 MiB", long, strconv.Quote(long[:QuoteBytes]) + "... (16777216 bytes)"},
		// "é" is 2 bytes: the 100th starts at byte 198 and would be cut.
		{"cut on a character", "x" + strings.Repeat("é", 150), strconv.Quote("x"+strings.Repeat("é", 99)) + "... (301 bytes)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Quote(tc.in)
			if got != tc.want {
				t.Fatalf("Quote = %.300q, want %.300q", got, tc.want)
			}
			if unq, err := strconv.Unquote(got[:strings.LastIndexByte(got, '"')+1]); err != nil || !utf8.ValidString(unq) {
				t.Fatalf("%q does not start with a valid quoted string (%v)", got, err)
			}
		})
	}
}

// TestReportLimits reports datasets over each limit, with the defaults and
// with a Config: each is refused with an error naming the limit and the
// value and quoting no more than QuoteBytes of any pattern; reports within
// the limits are accepted.
func TestReportLimits(t *testing.T) {
	dir := t.TempDir()
	glob := writeVariedFiles(t, dir, 5) // 4 of the 5 files hold chunks
	one := filepath.Join(dir, "f0001.rio")
	repeat := func(p string, n int) []string { return slices.Repeat([]string{p}, n) }
	long := "/" + strings.Repeat("a", 1<<20)
	for _, tc := range []struct {
		name     string
		cfg      Config
		patterns []string
		err      string // "" if accepted
	}{
		{"no pattern", Config{}, nil, "dataset: no paths given"},
		{"empty pattern", Config{}, []string{one, ""}, "dataset: pattern 2 of 2 is empty"},
		{"a million empty patterns", Config{}, make([]string, 1000000), "dataset: 1000000 patterns, more than the limit of 10000 (MaxPatterns)"},
		{"too many copies of a file", Config{}, repeat(one, DefaultMaxPatterns+1), "dataset: 10001 patterns, more than the limit of 10000 (MaxPatterns)"},
		{"as many patterns as allowed", Config{MaxTotalBytes: 1 << 20}, repeat(one, DefaultMaxPatterns), ""},
		{"configured pattern limit", Config{MaxPatterns: 2}, []string{one, one, glob}, "dataset: 3 patterns, more than the limit of 2 (MaxPatterns)"},
		{"one long pattern", Config{}, []string{one, long},
			"dataset: pattern 2 of 2, " + Quote(long) + ", is 1048577 bytes, more than the limit of 4096 (MaxPatternBytes)"},
		{"configured pattern bytes", Config{MaxPatternBytes: 10}, []string{one}, "more than the limit of 10 (MaxPatternBytes)"},
		{"total bytes", Config{}, repeat("/"+strings.Repeat("b", 4000), 17), "dataset: the 17 patterns take 68017 bytes, more than the limit of 65536 (MaxTotalBytes)"},
		{"configured total bytes", Config{MaxTotalBytes: len(one) + 1}, []string{one, one}, "more than the limit of " + strconv.Itoa(len(one)+1) + " (MaxTotalBytes)"},
		{"too many files", Config{MaxFiles: 4}, []string{glob}, "dataset: the patterns match 5 files, more than the limit of 4 (MaxFiles)"},
		{"too many files, more patterns to go", Config{MaxFiles: 4}, []string{glob, one}, "dataset: the patterns match at least 5 files, more than the limit of 4 (MaxFiles)"},
		{"too many files, after duplicates", Config{MaxFiles: 4}, []string{one, one, glob}, "dataset: the patterns match 5 files, more than the limit of 4 (MaxFiles)"},
		{"duplicates count once", Config{MaxFiles: 5}, append(repeat(one, 20), glob, glob), ""},
		{"negative limit", Config{MaxFiles: -1}, []string{one}, "dataset: Config.MaxFiles is -1; want 0 (the default, 1000000) to 2147483647"},
		{"files past int32", Config{MaxFiles: math.MaxInt32 + 1}, []string{one}, "dataset: Config.MaxFiles is 2147483648"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds, err := BuildWith(tc.cfg, tc.patterns, 3)
			if tc.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(ds.Patterns, tc.patterns) {
					t.Fatal("the patterns are not kept as reported")
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("error %.500v, want one saying %.500q", err, tc.err)
			}
			if len(err.Error()) > 4*QuoteBytes+200 {
				t.Fatalf("error of %d bytes: a pattern is echoed whole", len(err.Error()))
			}
		})
	}
}
