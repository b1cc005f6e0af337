package masterbench

import (
	"bufio"
	"cmp"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/pkg/errors"
)

// The histograms a paced row reads at the start and the end of its window:
// etcd's WAL fsyncs from etcd's /metrics, the master's commits from its own.
const (
	fsyncMetric       = "etcd_disk_wal_fsync_duration_seconds"
	commitMetric      = "trainmaster_commit_duration_seconds"
	commitGroupMetric = "trainmaster_commit_group_entries"
)

// histogram is a Prometheus histogram as its text format gives it: the
// cumulative count of each bucket, by its upper bound (the le label as
// written), and the sum and count of the observations, each summed over
// any other labels.
type histogram struct {
	buckets    map[string]float64
	sum, count float64
}

// parseHistograms reads the named histograms from a page in Prometheus'
// text format; a name the page lacks is missing from the result.
func parseHistograms(r io.Reader, names ...string) (map[string]*histogram, error) {
	got := map[string]*histogram{}
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		for _, name := range names {
			rest, ok := strings.CutPrefix(line, name)
			if !ok {
				continue
			}
			if err := addSample(got, name, rest); err != nil {
				return nil, err
			}
		}
	}
	return got, errors.Wrap(sc.Err(), "metrics page")
}

// addSample adds the sample of a line of histogram name, less the name:
// _bucket{...le="x"...} v, _sum v or _count v, with or without labels.
func addSample(got map[string]*histogram, name, rest string) error {
	suffix, sample, _ := strings.Cut(rest, " ")
	suffix, labels, _ := strings.Cut(suffix, "{")
	if suffix != "_bucket" && suffix != "_sum" && suffix != "_count" {
		return nil // another metric whose name begins with this one
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(sample), 64)
	if err != nil {
		return errors.WithMessagef(err, "metrics page: %s%s", name, rest)
	}
	h := got[name]
	if h == nil {
		h = &histogram{buckets: map[string]float64{}}
		got[name] = h
	}
	switch suffix {
	case "_sum":
		h.sum += v
	case "_count":
		h.count += v
	default:
		_, le, ok := strings.Cut(labels, `le="`)
		if le, _, ok = strings.Cut(le, `"`); !ok {
			return errors.Errorf("metrics page: a bucket of %s without its bound: %s%s", name, name, rest)
		}
		h.buckets[le] += v
	}
	return nil
}

// Quantiles are what a histogram observed between two readings: the
// number of observations, their mean, and the upper bounds of the buckets
// holding the median and the 99th percentile (le labels as written; "+Inf"
// past the largest bound; "" when nothing was observed).
type Quantiles struct {
	Count float64 `json:"count"`
	Mean  float64 `json:"mean"`
	P50   string  `json:"p50_le"`
	P99   string  `json:"p99_le"`
}

// delta returns the quantiles of what after observed since before (nil:
// since it began).
func delta(before, after *histogram) Quantiles {
	if after == nil {
		return Quantiles{}
	}
	if before == nil {
		before = &histogram{}
	}
	q := Quantiles{Count: after.count - before.count}
	if q.Count <= 0 {
		return Quantiles{}
	}
	q.Mean = (after.sum - before.sum) / q.Count
	bounds := make([]string, 0, len(after.buckets))
	for le := range after.buckets {
		bounds = append(bounds, le)
	}
	slices.SortFunc(bounds, compareBounds)
	rank := func(p float64) string {
		want := math.Ceil(p * q.Count) // nearest rank
		for _, le := range bounds {
			if after.buckets[le]-before.buckets[le] >= want {
				return le
			}
		}
		return "+Inf"
	}
	q.P50, q.P99 = rank(0.50), rank(0.99)
	return q
}

// compareBounds orders le labels by value ("+Inf" last); one that is not
// a number sorts last too.
func compareBounds(a, b string) int {
	bound := func(s string) float64 {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return math.Inf(1)
		}
		return v
	}
	return cmp.Compare(bound(a), bound(b))
}
