package masterbench

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/pkg/errors"
)

// observation is what reading the master's /metrics once a second in a
// paced window, and etcd's at its start and end, gave.
type observation struct {
	page                 MetricsPage
	err                  error     // the first failure
	fsync, commit, group Quantiles // the histograms' deltas
}

// pages are the first and last /metrics bodies read, of the master and of
// etcd, parsed at the end so that parsing costs nothing in the window.
type pages struct{ first, last []byte }

// observe reads the master's /metrics at from, every scrapeEvery after it
// and at until, timing each read in full; it reads etcd's /metrics at the
// first and the last of these times. The histograms' deltas between the
// two are the window's.
func observe(ctx context.Context, cfg Config, doorURL string, from, until time.Time) observation {
	var o observation
	var master, etcd pages
	var times []time.Duration
	fail := func(err error) {
		if o.page.Failed++; o.err == nil {
			o.err = err
		}
	}
	ticks := int(until.Sub(from) / scrapeEvery)
	for k := 0; k <= ticks; k++ {
		if !sleepUntil(ctx, from.Add(time.Duration(k)*scrapeEvery)) {
			break
		}
		if k == 0 || k == ticks {
			if body, _, err := readBody(ctx, cfg.Metrics, strings.TrimSuffix(cfg.Endpoints[0], "/")+"/metrics"); err != nil {
				fail(errors.WithMessage(err, "etcd"))
			} else {
				etcd.keep(k == 0, body)
			}
		}
		body, took, err := readBody(ctx, doorClient, strings.TrimSuffix(doorURL, "/")+"/metrics")
		if err != nil {
			fail(errors.WithMessage(err, "master"))
			continue
		}
		master.keep(k == 0, body)
		o.page.Reads++
		o.page.Bytes = len(body)
		times = append(times, took)
	}
	o.page.Time = summarise(times)
	fsync := etcd.deltas(fsyncMetric)
	commits := master.deltas(commitMetric, commitGroupMetric)
	o.fsync, o.commit, o.group = fsync[0], commits[0], commits[1]
	return o
}

// keep keeps body as the first page or as the last so far.
func (p *pages) keep(first bool, body []byte) {
	if first {
		p.first = body
		return
	}
	p.last = body
}

// deltas are the named histograms' quantiles between the first and the
// last page; zero when either is missing or unreadable.
func (p *pages) deltas(names ...string) []Quantiles {
	qs := make([]Quantiles, len(names))
	if p.first == nil || p.last == nil {
		return qs
	}
	before, err := parseHistograms(bytes.NewReader(p.first), names...)
	if err != nil {
		return qs
	}
	after, err := parseHistograms(bytes.NewReader(p.last), names...)
	if err != nil {
		return qs
	}
	for i, name := range names {
		qs[i] = delta(before[name], after[name])
	}
	return qs
}

// readBody reads url in full and says how long that took.
func readBody(ctx context.Context, client *http.Client, url string) ([]byte, time.Duration, error) {
	var body []byte
	began := time.Now()
	err := readPage(ctx, client, url, func(r io.Reader) (err error) {
		body, err = io.ReadAll(r)
		return err
	})
	return body, time.Since(began), err
}
