package masterbench

import (
	"slices"
	"sync"
	"time"
)

// Latencies summarises call durations.
type Latencies struct {
	P50 time.Duration `json:"p50_ns"`
	P99 time.Duration `json:"p99_ns"`
	Max time.Duration `json:"max_ns"`
}

// summarise sorts ds and returns its percentiles (nearest rank).
func summarise(ds []time.Duration) Latencies {
	if len(ds) == 0 {
		return Latencies{}
	}
	slices.Sort(ds)
	rank := func(p float64) time.Duration {
		i := int(p*float64(len(ds))+0.5) - 1
		return ds[min(max(i, 0), len(ds)-1)]
	}
	return Latencies{P50: rank(0.50), P99: rank(0.99), Max: ds[len(ds)-1]}
}

// latencyList gathers durations from several goroutines.
type latencyList struct {
	mu sync.Mutex // guards ds
	ds []time.Duration
}

func (l *latencyList) add(d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ds = append(l.ds, d)
}

func (l *latencyList) all() []time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.ds)
}
