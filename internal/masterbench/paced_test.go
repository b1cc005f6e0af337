package masterbench

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/trainmaster/master/go/wire"
)

func TestCheckDescriptors(t *testing.T) {
	for _, tc := range []struct {
		trainers int
		limit    uint64
		refused  bool
	}{
		{10000, 20000, false},
		{10000, 10000 + spareDescriptors, false},
		{10000, 10000, true},
		{1000, 1024, true},
		{10000, 0, false}, // unknown: let the dial say
	} {
		err := checkDescriptors(tc.trainers, tc.limit)
		if (err != nil) != tc.refused {
			t.Errorf("%d trainers under %d: %v", tc.trainers, tc.limit, err)
		}
		if err != nil && !strings.Contains(err.Error(), "RLIMIT_NOFILE") {
			t.Errorf("the error does not name the limit: %v", err)
		}
	}
}

func TestRequeueWatch(t *testing.T) {
	var w requeueWatch
	t0 := time.Unix(1000, 0)
	w.saw(wire.Task{Index: 1, Epoch: 1}, t0) // before arming: ignored
	done := w.arm([]wire.Task{{Index: 1, Epoch: 1, Pass: 3}, {Index: 2, Epoch: 2, Pass: 3}})
	w.saw(wire.Task{Index: 1, Epoch: 1, Pass: 4}, t0.Add(time.Second)) // the same index in another pass
	w.saw(wire.Task{Index: 2, Epoch: 3, Pass: 3}, t0.Add(2*time.Second))
	select {
	case <-done:
		t.Fatal("done with a task still out")
	default:
	}
	w.saw(wire.Task{Index: 1, Epoch: 2, Pass: 3}, t0.Add(3*time.Second))
	w.saw(wire.Task{Index: 1, Epoch: 3, Pass: 3}, t0.Add(4*time.Second)) // seen already
	<-done
	if first, last, missing := w.seen(); !first.Equal(t0.Add(2*time.Second)) || !last.Equal(t0.Add(3*time.Second)) || missing != 0 {
		t.Fatalf("first %v, last %v, %d missing", first.Sub(t0), last.Sub(t0), missing)
	}
	var none requeueWatch
	<-none.arm(nil)
}

// cell returns the cell of a right-aligned table's line under header
// (counting runes: "≤" is one column).
func cell(head, line, header string) string {
	i := strings.Index(head, header)
	if i < 0 {
		return ""
	}
	end, runes := len([]rune(head[:i+len(header)])), []rune(line)
	if end > len(runes) || strings.TrimSpace(string(runes[end-len(header):end])) == "" {
		return ""
	}
	fields := strings.Fields(string(runes[:end]))
	return fields[len(fields)-1]
}

func TestPacedReportText(t *testing.T) {
	ms := func(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }
	rep := PacedReport{CPUs: 2, Codec: "gob", Progress: true, CallEvery: 5 * time.Second, Warmup: time.Second, Duration: 30 * time.Second, RequeueWait: time.Minute,
		Rows: []PacedResult{{
			Trainers: 1000, Tasks: 26000, Connect: ms(180), TargetPerSec: 200,
			GetTask:      Calls{Count: 5994, PerSec: 199.8, Latency: Latencies{ms(2), ms(9), ms(40)}, Late: 0},
			TaskProgress: &Calls{Count: 6000, PerSec: 200, Latency: Latencies{ms(1.5), ms(8), ms(30)}},
			Master:       Process{Memory: Memory{RSS: 120 << 20, Peak: 130 << 20}, Threads: 9, FDs: 1030},
			Metrics:      MetricsPage{Reads: 31, Bytes: 300 << 10, Time: Latencies{P50: ms(20), Max: ms(90)}},
			Fsync:        Quantiles{Count: 4000, P50: "0.002", P99: "0.008"},
			Commit:       Quantiles{Count: 3000, P50: "0.004", P99: "0.016"},
			CommitGroup:  Quantiles{Count: 3000, P50: "2", P99: "8"},
			Requeue:      Requeue{Victims: 100, Held: 100, Again: 100, First: ms(5010), All: ms(5430), Grace: "5s"},
		}, {
			Trainers: 10000, TargetPerSec: 2000, GetTask: Calls{PerSec: 1500, Late: 312, Latency: Latencies{ms(260), ms(2600), ms(4000)}},
			Errors: 3, Metrics: MetricsPage{Failed: 2},
			Commit:  Quantiles{Count: 900, P50: "0.512", P99: "+Inf"},
			Requeue: Requeue{Victims: 1000, Held: 1000, Again: 998, First: ms(5200), TimedOut: true, Grace: "5s"},
		}}}
	var b bytes.Buffer
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	lines := strings.Split(text, "\n")
	if !strings.Contains(lines[0], "calls GetTask every 5s") || !strings.Contains(lines[0], "reports progress") {
		t.Fatalf("%s", text)
	}
	tables := map[string][]string{} // header line -> its rows
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "trainers") {
			tables[l] = lines[i+1 : i+3]
		}
	}
	if len(tables) != 3 {
		t.Fatalf("%d tables:\n%s", len(tables), text)
	}
	want := map[string][2]string{ // header -> the cells of the two rows
		"GetTask/s": {"199.8", "1500.0"}, "late": {"0", "312"}, "progress/s": {"200.0", "-"}, "errors": {"0", "3"},
		"threads": {"9", "0"}, "fds": {"1030", "0"}, "/metrics": {"KiB", "failed)"}, "fsync p50": {"≤2ms", "-"},
		"commit p50": {"≤4ms", "≤512ms"}, "entries p50": {"≤2", "-"}, "commits/s": {"100", "30"},
		"dispatched again": {"100", "998"}, "all": {"5.43s", "out"}, "trainer grace": {"5s", "5s"},
	}
	found := 0
	for head, rows := range tables {
		for header, cells := range want {
			if !strings.Contains(head, header) {
				continue
			}
			found++
			for i, w := range cells {
				if got := cell(head, rows[i], header); got != w {
					t.Errorf("column %q, row %d: %q, want %q:\n%s", header, i, got, w, text)
				}
			}
		}
	}
	if found < len(want) {
		t.Errorf("%d of %d columns found:\n%s", found, len(want), text)
	}
}
