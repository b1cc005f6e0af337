package masterbench

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/pkg/errors"
)

// The etcd metrics a run reads, before and after the trainers run.
const (
	walBytesMetric = "etcd_disk_wal_write_bytes_total"
	putBytesMetric = "etcd_debugging_mvcc_total_put_size_in_bytes"
)

// scrapeMetrics reads the named metrics from an etcd's /metrics page.
func scrapeMetrics(ctx context.Context, client *http.Client, endpoint string, names ...string) (map[string]float64, error) {
	var got map[string]float64
	err := readPage(ctx, client, strings.TrimSuffix(endpoint, "/")+"/metrics", func(r io.Reader) (err error) {
		got, err = parseMetrics(r, names...)
		return err
	})
	return got, err
}

// parseMetrics reads unlabelled samples of the Prometheus text format.
func parseMetrics(r io.Reader, names ...string) (map[string]float64, error) {
	got := map[string]float64{}
	for sc := bufio.NewScanner(r); sc.Scan(); {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.HasPrefix(name, "#") {
			continue
		}
		for _, want := range names {
			if name == want {
				v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
				if err != nil {
					return nil, errors.WithMessagef(err, "etcd metrics: %s", name)
				}
				got[name] = v
			}
		}
	}
	for _, want := range names {
		if _, ok := got[want]; !ok {
			return nil, errors.Errorf("etcd metrics: no %s", want)
		}
	}
	return got, nil
}
