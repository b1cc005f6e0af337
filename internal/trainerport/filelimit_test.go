package trainerport

import (
	"strings"
	"testing"
)

// TestMaxConnsFromTheFileLimit: the default MaxConns leaves ReservedFiles
// of the file limit to the rest of the master, takes half of a limit too
// small for that, stops at MaxDefaultConns, and says why in each case.
func TestMaxConnsFromTheFileLimit(t *testing.T) {
	for _, tc := range []struct {
		limit uint64
		conns int
		why   string
	}{
		{0, 1024, "defaults to 1024: the file limit (RLIMIT_NOFILE) is unknown here"},
		{1, 1, "defaults to 1: half the file limit (RLIMIT_NOFILE) of 1"},
		{256, 128, "defaults to 128: half the file limit (RLIMIT_NOFILE) of 256, too small to keep 256 descriptors"},
		{512, 256, "half the file limit (RLIMIT_NOFILE) of 512"},
		{513, 257, "defaults to 257: the file limit (RLIMIT_NOFILE) of 513, less 256 descriptors kept"},
		{1024, 768, "the file limit (RLIMIT_NOFILE) of 1024, less 256"},
		{20000, 19744, "defaults to 19744: the file limit (RLIMIT_NOFILE) of 20000, less 256 descriptors kept for etcd, the side door and files; raise the hard limit"},
		{MaxDefaultConns + ReservedFiles, MaxDefaultConns, "the file limit (RLIMIT_NOFILE) of 65792, less 256"},
		{MaxDefaultConns + ReservedFiles + 1, MaxDefaultConns, "defaults to 65536, its ceiling: the file limit (RLIMIT_NOFILE) of 65793 allows more"},
		{1 << 20, MaxDefaultConns, "its ceiling"},
		{^uint64(0), MaxDefaultConns, "its ceiling"}, // RLIM_INFINITY
	} {
		d := DefaultMaxConns(tc.limit)
		if d.MaxConns != tc.conns || !strings.Contains(d.Why, tc.why) {
			t.Errorf("limit %d: %d connections (%q); want %d, saying %q", tc.limit, d.MaxConns, d.Why, tc.conns, tc.why)
		}
	}
}

// TestLimitsDefaultToTheFallback: a zero MaxConns takes FallbackMaxConns;
// the file limit is the binary's to read.
func TestLimitsDefaultToTheFallback(t *testing.T) {
	l, err := Limits{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if l.MaxConns != FallbackMaxConns {
		t.Fatalf("MaxConns %d, want %d", l.MaxConns, FallbackMaxConns)
	}
}
