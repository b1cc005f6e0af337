// Package dataset turns the path patterns a user gives into the list of
// RecordIO files of a dataset.
package dataset

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Expand expands each pattern with filepath.Glob and returns the matching
// paths sorted and without duplicates. A pattern that is malformed or matches
// nothing is an error naming it; so is a path that names a directory.
func Expand(patterns []string) ([]string, error) {
	if len(patterns) == 0 {
		return nil, fmt.Errorf("dataset: no paths given")
	}
	var paths []string
	for _, p := range patterns {
		matches, err := filepath.Glob(p)
		if err != nil {
			return nil, fmt.Errorf("dataset: bad pattern %q: %v", p, err)
		}
		if len(matches) == 0 {
			if !strings.ContainsAny(p, `*?[\`) {
				return nil, fmt.Errorf("dataset: %s: no such file", p)
			}
			return nil, fmt.Errorf("dataset: pattern %q matches no file", p)
		}
		paths = append(paths, matches...)
	}
	slices.Sort(paths)
	paths = slices.Compact(paths)
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("dataset: %w", err)
		}
		if st.IsDir() {
			return nil, fmt.Errorf("dataset: %s is a directory, not a RecordIO file", p)
		}
	}
	return paths, nil
}
