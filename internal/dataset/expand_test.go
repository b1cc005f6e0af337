package dataset

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestExpand(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"b.rio", "a.rio", "c.txt"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "sub.rio"), 0o755); err != nil {
		t.Fatal(err)
	}
	j := func(name string) string { return filepath.Join(dir, name) }
	for _, tc := range []struct {
		name     string
		patterns []string
		want     []string
		err      string
	}{
		{"sorted", []string{j("b.rio"), j("a.rio")}, []string{j("a.rio"), j("b.rio")}, ""},
		{"glob and duplicate", []string{j("*.rio"), j("a.rio")}, nil, "is a directory"},
		{"glob", []string{j("[ab].rio"), j("a.rio")}, []string{j("a.rio"), j("b.rio")}, ""},
		{"missing file", []string{j("a.rio"), j("zz.rio")}, nil, strconv.Quote(j("zz.rio")) + ": no such file"},
		{"empty glob", []string{j("*.none")}, nil, `matches no file`},
		{"bad pattern", []string{j("[")}, nil, "bad pattern"},
		{"nothing", nil, nil, "no paths given"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Expand(tc.patterns)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
