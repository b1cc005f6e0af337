package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadToken reads the trainer port's tokens from files.
func TestReadToken(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		content, want, err string
	}{
		{"s3cret\n", "s3cret", ""},
		{"  two words \r\n", "two words", ""},
		{"\n \n", "", "is empty"},
	} {
		path := filepath.Join(dir, "token")
		if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := readToken(path)
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%q: %q, %v; want %q, %q", tc.content, got, err, tc.want, tc.err)
		}
	}
	if _, err := readToken(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing file gave a token")
	}
}
