package client_test

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/trainmaster/master/go/client"
)

func TestNewFilesRefuses(t *testing.T) {
	for _, tc := range []struct {
		name    string
		paths   []string
		records []int64
		want    string // in the error
	}{
		{"more paths", []string{"a", "b"}, []int64{1}, "2 files and 1 record counts"},
		{"more counts", []string{"a"}, []int64{1, 2}, "1 files and 2 record counts"},
		{"negative count", []string{"a", "b", "c"}, []int64{1, -4, 2}, `file "b" (#1) holds -4 records`},
		{"past int64", []string{"a", "b"}, []int64{math.MaxInt64, 1}, `file "b" (#1) takes the records past`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := client.NewFiles(tc.paths, tc.records)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("NewFiles: %v, %v; want an error saying %q", f, err, tc.want)
			}
		})
	}
}

// files is a, empty, b, c, empty: records 0-2 are a's, 3-3 b's, 4-8 c's.
var files = struct {
	paths   []string
	records []int64
}{[]string{"a", "empty1", "b", "c", "empty2"}, []int64{3, 0, 1, 5, 0}}

func TestFilesLocate(t *testing.T) {
	f, err := client.NewFiles(files.paths, files.records)
	if err != nil {
		t.Fatal(err)
	}
	if n := f.Records(); n != 9 {
		t.Fatalf("Records: %d, want 9", n)
	}
	for _, tc := range []struct {
		index  int64
		path   string
		record int64
		err    string
	}{
		{index: 0, path: "a", record: 0},
		{index: 2, path: "a", record: 2},
		{index: 3, path: "b", record: 0}, // past the empty file
		{index: 4, path: "c", record: 0},
		{index: 8, path: "c", record: 4},
		{index: 9, err: "record index 9 out of the 9 records"},
		{index: -1, err: "record index -1 out of the 9 records"},
	} {
		path, record, err := f.Locate(tc.index)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("Locate(%d): %q, %d, %v; want an error saying %q", tc.index, path, record, err, tc.err)
		case tc.err == "" && (err != nil || path != tc.path || record != tc.record):
			t.Errorf("Locate(%d): %q, %d, %v; want %q, %d", tc.index, path, record, err, tc.path, tc.record)
		}
	}
}

func TestFilesSpans(t *testing.T) {
	f, err := client.NewFiles(files.paths, files.records)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		start, end int64
		want       []client.Span
		err        string
	}{
		{start: 0, end: 9, want: []client.Span{{"a", 0, 3}, {"b", 0, 1}, {"c", 0, 5}}},
		{start: 1, end: 2, want: []client.Span{{"a", 1, 2}}},
		{start: 2, end: 5, want: []client.Span{{"a", 2, 3}, {"b", 0, 1}, {"c", 0, 1}}},
		{start: 3, end: 4, want: []client.Span{{"b", 0, 1}}},
		{start: 6, end: 9, want: []client.Span{{"c", 2, 5}}},
		{start: 4, end: 4},
		{start: 9, end: 9},
		{start: 0, end: 10, err: "record range [0, 10) out of the 9 records"},
		{start: -1, end: 2, err: "record range [-1, 2) out of the 9 records"},
		{start: 5, end: 4, err: "record range [5, 4) out of the 9 records"},
	} {
		spans, err := f.Spans(tc.start, tc.end)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("Spans(%d, %d): %v, %v; want an error saying %q", tc.start, tc.end, spans, err, tc.err)
		case tc.err == "" && (err != nil || !reflect.DeepEqual(spans, tc.want)):
			t.Errorf("Spans(%d, %d): %v, %v; want %v", tc.start, tc.end, spans, err, tc.want)
		}
	}
	for i := range f.Records() {
		path, record, err := f.Locate(i)
		spans, serr := f.Spans(i, i+1)
		if want := []client.Span{{path, record, record + 1}}; err != nil || serr != nil || !reflect.DeepEqual(spans, want) {
			t.Errorf("index %d: Locate says %v (%v), Spans %v (%v)", i, want, err, spans, serr)
		}
	}
}

func TestFilesNone(t *testing.T) {
	for _, records := range [][]int64{nil, {0, 0}} {
		f, err := client.NewFiles(make([]string, len(records)), records)
		if err != nil {
			t.Fatal(err)
		}
		if f.Records() != 0 {
			t.Errorf("%v: Records %d", records, f.Records())
		}
		if _, _, err := f.Locate(0); err == nil {
			t.Errorf("%v: Locate(0) found a record", records)
		}
		if spans, err := f.Spans(0, 0); err != nil || spans != nil {
			t.Errorf("%v: Spans(0, 0): %v, %v", records, spans, err)
		}
	}
}
