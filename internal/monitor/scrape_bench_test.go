package monitor

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"testing"
)

// BenchmarkScrape measures what the side door costs with a crowd of
// trainers (crowd: of every 20, 16 working, 2 idle, 1 stalled, 1 lost):
// a scrape of /metrics as promhttp serves it (Collect and the text
// encoding; per-trainer series while the trainers are at most
// DefaultTrainerSeries, none above), and /status.json (Status and its
// JSON). doc/operations.md wants a scrape under 100 ms at 10,000.
func BenchmarkScrape(b *testing.B) {
	for _, n := range []int{1000, 10_000, 100_000} {
		m, c := newMonitor(Config{})
		src := newConnected(running)
		m.Lead(src)
		crowd(m, src, c, n)
		b.Run(fmt.Sprintf("trainers=%d/metrics", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				scrapeText(b, m)
			}
		})
		b.Run(fmt.Sprintf("trainers=%d/status.json", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := json.NewEncoder(io.Discard).Encode(m.Status()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkTrainerMemory reports the heap a crowd of trainers takes, per
// trainer (B/trainer): what bounds the table's memory at Config.MaxTrainers.
func BenchmarkTrainerMemory(b *testing.B) {
	const n = 10_000
	var perTrainer float64
	for b.Loop() {
		var before, after runtime.MemStats
		src := &connected{jobSource: running, conns: make(map[string]int, n)} // the service's, sized before
		runtime.GC()
		runtime.ReadMemStats(&before)
		m, c := newMonitor(Config{})
		m.Lead(src)
		crowd(m, src, c, n)
		runtime.GC()
		runtime.ReadMemStats(&after)
		perTrainer = float64(after.HeapAlloc-before.HeapAlloc) / n
		runtime.KeepAlive(m)
	}
	b.ReportMetric(perTrainer, "B/trainer")
}
