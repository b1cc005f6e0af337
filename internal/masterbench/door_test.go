package masterbench

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestBenchScrapeDoor(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("trainmaster_leader 1\n")) })
	mux.HandleFunc("GET /status.json", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(`{"trainers_total": 64}`)) })
	door := httptest.NewServer(mux)
	defer door.Close()
	now := time.Now()
	// Rounds at now and now+1s, not at now+2s.
	got := scrapeDoor(context.Background(), door.Client(), door.URL+"/", now, now.Add(2*time.Second))
	if got.ok != 4 || got.failed != 0 || got.err != nil || got.trainers != 64 {
		t.Fatalf("%+v", got)
	}

	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	got = scrapeDoor(context.Background(), closed.Client(), closed.URL, now, now.Add(time.Millisecond))
	if got.ok != 0 || got.failed != 2 || got.err == nil || !strings.Contains(got.err.Error(), "side door") {
		t.Fatalf("%+v", got)
	}
	notFound := httptest.NewServer(http.NotFoundHandler())
	defer notFound.Close()
	got = scrapeDoor(context.Background(), notFound.Client(), notFound.URL, now, now.Add(time.Millisecond))
	if got.ok != 0 || got.failed != 2 || got.err == nil || !strings.Contains(got.err.Error(), "404") {
		t.Fatalf("%+v", got)
	}
}

func TestBenchDoorOrder(t *testing.T) {
	off, on := &job{}, &job{door: true}
	for _, tc := range []struct {
		doorFirst bool
		want      []*job
	}{{false, []*job{off, on, on, off}}, {true, []*job{on, off, off, on}}} {
		if got := doorOrder([]*job{off, on}, tc.doorFirst); !slices.Equal(got, tc.want) {
			t.Errorf("door first %v: %v, want %v", tc.doorFirst, got, tc.want)
		}
	}
}

// TestBenchReportText checks the table of a run with the door both ways:
// the mode of each window, the pages read, and the door's cost, in aligned
// columns.
func TestBenchReportText(t *testing.T) {
	// A steady drift: each window 10% below the one before, bare
	// transactions too; the door costs nothing.
	var rows []Result
	for i, door := range []bool{false, true, true, false} {
		f := 1 - 0.1*float64(i)
		r := Result{Trainers: 64, Door: door, TasksPerSec: 10000 * f, BareTxnsPerSec: 12500 * f, Ratio: 0.8}
		if door {
			r.Scrapes = 20
		}
		rows = append(rows, r)
	}
	cost := doorCost(64, rows, withDoor)
	if cost.Trainers != 64 || cost.TasksPerSec != 1 || cost.Ratio != 1 || strings.Join(cost.Order, " ") != "off on on off" {
		t.Fatalf("a steady drift is taken for a cost: %+v", cost)
	}
	rows[1].TasksPerSec, rows[1].Ratio = rows[1].TasksPerSec-170, 0.784
	if cost = doorCost(64, rows, withDoor); cost.TasksPerSec < 0.9899 || cost.TasksPerSec > 0.9901 || cost.Ratio < 0.9899 || cost.Ratio > 0.9901 {
		t.Fatalf("doorCost: %+v, want 0.99 and 0.99", cost)
	}
	rep := Report{CPUs: 2, Codec: "gob", Door: DoorBoth, ChunksPerTask: 1, Warmup: time.Second, Duration: 10 * time.Second,
		Datasets: []DatasetResult{{Chunks: 1000, Tasks: 1000, Memory: Memory{RSS: 36 << 20, Peak: 37 << 20},
			DoorMemory: &Memory{RSS: 40 << 20, Peak: 41 << 20}, Runs: rows, DoorCost: []DoorCost{cost}}}}
	var b bytes.Buffer
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	lines := strings.Split(strings.TrimSpace(text), "\n")
	if len(lines) < 6 || !strings.Contains(text, "with the door 40 MiB (peak 41 MiB)") ||
		!strings.HasSuffix(text, "with the door, 64 trainer(s): 0.990 of the tasks/s without it, 0.990 of the ratio (windows off, on, on, off)\n") {
		t.Fatalf("%s", text)
	}
	head, table := lines[len(lines)-6], lines[len(lines)-5:len(lines)-1]
	for _, field := range []string{"door", "scrapes", "ratio"} {
		if !strings.Contains(head, field) {
			t.Errorf("%q lacks %q", head, field)
		}
	}
	// Right-aligned columns: each cell ends where its header ends.
	for i, want := range []struct{ door, ratio, scrapes string }{{"off", "0.80", ""}, {"on", "0.78", "20"}, {"on", "0.80", "20"}, {"off", "0.80", ""}} {
		for _, col := range []struct{ header, cell string }{{"door", want.door}, {"ratio", want.ratio}, {"scrapes", want.scrapes}} {
			end := strings.Index(head, col.header) + len(col.header)
			if !strings.HasSuffix(strings.TrimRight(table[i][:end], " "), col.cell) || (col.cell == "" && strings.TrimSpace(table[i][end-len(col.header):end]) != "") {
				t.Errorf("window %d, column %q: want %q:\n%s", i, col.header, col.cell, text)
			}
		}
	}
}

func withDoor(r Result) bool { return r.Door }
