package masterbench

import (
	"strconv"
	"strings"
	"testing"
)

// page is a metrics page holding the fsync histogram with counts per
// bucket (cumulative, as Prometheus writes them) at 1, 2, 4 and 8 ms, and
// a histogram of the same prefix with labels.
func page(counts [5]float64, sum float64) string {
	var b strings.Builder
	b.WriteString("# HELP etcd_disk_wal_fsync_duration_seconds The latency distributions of fsync called by WAL.\n")
	b.WriteString("# TYPE etcd_disk_wal_fsync_duration_seconds histogram\n")
	for i, le := range []string{"0.001", "0.002", "0.004", "0.008", "+Inf"} {
		b.WriteString(`etcd_disk_wal_fsync_duration_seconds_bucket{le="` + le + `"} ` + ftoa(counts[i]) + "\n")
	}
	b.WriteString("etcd_disk_wal_fsync_duration_seconds_sum " + ftoa(sum) + "\n")
	b.WriteString("etcd_disk_wal_fsync_duration_seconds_count " + ftoa(counts[4]) + "\n")
	b.WriteString("etcd_disk_wal_fsync_duration_seconds_total_other 7\n")
	return b.String()
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func TestHistogramDelta(t *testing.T) {
	before := page([5]float64{10, 10, 10, 10, 10}, 0.01)
	for _, tc := range []struct {
		name  string
		after [5]float64
		sum   float64
		want  Quantiles
	}{
		{"nothing observed", [5]float64{10, 10, 10, 10, 10}, 0.01, Quantiles{}},
		// 100 more: 60 under 1 ms, 39 under 4 ms, 1 over 8 ms.
		{"a tail past the largest bound", [5]float64{70, 70, 109, 109, 110}, 0.21, Quantiles{Count: 100, Mean: 0.002, P50: "0.001", P99: "0.004"}},
		{"the 99th past the largest bound", [5]float64{60, 60, 60, 60, 110}, 0.51, Quantiles{Count: 100, Mean: 0.005, P50: "0.001", P99: "+Inf"}},
		// The median is the 50th of 100: the bucket where the count reaches 50.
		{"the median at a bucket's edge", [5]float64{60, 70, 70, 110, 110}, 0.41, Quantiles{Count: 100, Mean: 0.004, P50: "0.001", P99: "0.008"}},
		{"the median one past it", [5]float64{59, 70, 70, 110, 110}, 0.41, Quantiles{Count: 100, Mean: 0.004, P50: "0.002", P99: "0.008"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := parseHistograms(strings.NewReader(before), fsyncMetric)
			if err != nil {
				t.Fatal(err)
			}
			a, err := parseHistograms(strings.NewReader(page(tc.after, tc.sum)), fsyncMetric)
			if err != nil {
				t.Fatal(err)
			}
			got := delta(b[fsyncMetric], a[fsyncMetric])
			if got.Count != tc.want.Count || got.P50 != tc.want.P50 || got.P99 != tc.want.P99 || got.Mean < tc.want.Mean*0.999 || got.Mean > tc.want.Mean*1.001 {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestParseHistogramsSumsLabels: a histogram with labels besides le (one
// per dataset, say) is summed over them; a histogram the page lacks is
// missing, and its delta zero.
func TestParseHistogramsSumsLabels(t *testing.T) {
	p := `trainmaster_commit_group_entries_bucket{dataset="a",le="1"} 3
trainmaster_commit_group_entries_bucket{dataset="a",le="+Inf"} 4
trainmaster_commit_group_entries_bucket{dataset="b",le="1"} 1
trainmaster_commit_group_entries_bucket{dataset="b",le="+Inf"} 6
trainmaster_commit_group_entries_sum{dataset="a"} 9
trainmaster_commit_group_entries_sum{dataset="b"} 21
trainmaster_commit_group_entries_count{dataset="a"} 4
trainmaster_commit_group_entries_count{dataset="b"} 6
`
	got, err := parseHistograms(strings.NewReader(p), commitGroupMetric, commitMetric)
	if err != nil {
		t.Fatal(err)
	}
	h := got[commitGroupMetric]
	if h == nil || h.buckets["1"] != 4 || h.buckets["+Inf"] != 10 || h.sum != 30 || h.count != 10 {
		t.Fatalf("%+v", h)
	}
	if q := delta(nil, h); q.Count != 10 || q.Mean != 3 || q.P50 != "+Inf" || q.P99 != "+Inf" {
		t.Fatalf("since the start: %+v", q)
	}
	if got[commitMetric] != nil || delta(nil, got[commitMetric]) != (Quantiles{}) {
		t.Fatalf("a histogram the page lacks: %+v", got[commitMetric])
	}
	for _, bad := range []string{"trainmaster_commit_group_entries_sum x\n", "trainmaster_commit_group_entries_bucket{dataset=\"a\"} 1\n"} {
		if _, err := parseHistograms(strings.NewReader(bad), commitGroupMetric); err == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
}
