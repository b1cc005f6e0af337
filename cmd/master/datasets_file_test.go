package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trainmaster/master/internal/dataset"
)

// safeText reports whether s holds no control byte but newlines and no
// byte outside ASCII: what a terminal shows as it is.
func safeText(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c != '\n' && (c < 0x20 || c >= 0x7f) {
			return false
		}
	}
	return true
}

// TestDatasetsFileNamesTheLine: every error of a -datasets file's content
// names the file and the line of the dataset refused, once prefixed, its
// bytes quoted and cut, and says what would be accepted.
func TestDatasetsFileNamesTheLine(t *testing.T) {
	eval := `{"name": "eval", "records": 10, "records_per_task": 1}`
	var many []string
	for i := range 17 {
		many = append(many, fmt.Sprintf(`{"name": "d%d", "records": 10, "records_per_task": 1}`, i))
	}
	for _, tc := range []struct {
		name, content string
		args          []string // more flags
		want          []string // %s: the file
	}{
		{"declared twice", "[\n  " + eval + ",\n  {\"name\": \"train\", \"records\": 1, \"records_per_task\": 1},\n  " + eval + "\n]", nil,
			[]string{`-datasets %s:4: dataset "eval" declared twice, first at -datasets %s:2: declare each name once`}},
		{"bad name", "[\n" + eval + ",\n" + `{"name": "Eval", "records": 10, "records_per_task": 1}` + "]", nil,
			[]string{`-datasets %s:3: declared dataset: dataset name "Eval": want lower-case letters`}},
		{"range over the limits", fmt.Sprintf("[\n\n{\"name\": \"big\", \"records\": %d, \"records_per_task\": 1}]", dataset.MaxRangeRecords+1), nil,
			[]string{`-datasets %s:3: dataset "big": dataset: an index-range dataset of`, "want 1 to"}},
		{"negative passes", "[" + eval + ",\n" + `{"name": "e2", "records": 10, "records_per_task": 1, "passes": -1}]`, nil,
			[]string{`-datasets %s:2: dataset "e2": 0 chunks per task, -1 passes (want 0, the master's, or more)`}},
		{"17 datasets", "[\n" + strings.Join(many, ",\n") + "\n]", nil,
			[]string{`-datasets %s:18: 17 datasets declared, more than the 16 allowed (-max-datasets)`}},
		{"train also by -dataset", "[\n" + `{"name": "train", "records": 10, "records_per_task": 1}` + "\n]", []string{"-dataset", "/data/*.recordio"},
			[]string{`-dataset: dataset "train" declared twice, first at -datasets %s:2: declare each name once`}},
		{"invalid JSON", "[\n" + eval + ",\n" + `{"name": "e2",`, nil,
			[]string{`-datasets %s:3: unexpected end of the file: want a JSON array of datasets`}},
		{"syntax error", "[\n" + eval + ",\n\n" + `{"name": "e2" x}]`, nil,
			[]string{`-datasets %s:4: invalid character 'x' after object key:value pair: want a JSON array of datasets`}},
		{"not an object", "[\n" + eval + ",\n\n 3]", nil,
			[]string{`-datasets %s:4: a dataset is a JSON number, not an object: want a JSON array of datasets`}},
		{"wrong type", "[\n" + `{"name": "e2", "records": "ten", "records_per_task": 1}]`, nil,
			[]string{`-datasets %s:2: field "records": want an integer, not "\"ten\""`}},
		{"binary file", "\x7fELF\x02\x01\x01\x00\x1b[2J\n\x00\x00", nil,
			[]string{`-datasets %s:1: invalid character '\x7f' looking for beginning of value: want a JSON array of datasets`}},
		{"long unknown key", "[\n" + `{"name": "e2", "` + strings.Repeat("\u00e9", 5000) + `": 1}]`, nil,
			[]string{`-datasets %s:2: unknown field "éé`, "... (10000 bytes) (want chunks_per_task, name, passes, patterns, records, records_per_task)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "datasets.json")
			if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			args := append([]string{"-datasets", path, "-endpoints", "http://127.0.0.1:1"}, tc.args...)
			err := run(t.Context(), args, new(strings.Builder))
			if err == nil {
				t.Fatal("the master started")
			}
			for _, want := range tc.want {
				if want = strings.ReplaceAll(want, "%s", path); !strings.Contains(err.Error(), want) {
					t.Errorf("%v\nwant an error containing %q", err, want)
				}
			}
			if msg := err.Error(); strings.HasPrefix(msg, "master:") || len(msg) > 1000 || !safeText(strings.ReplaceAll(msg, "é", "")) {
				t.Errorf("error of %d bytes, prefixed with master or showing raw bytes: %q", len(msg), msg)
			}
		})
	}
}
