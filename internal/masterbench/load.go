package masterbench

import (
	"context"
	"sync"
	"time"
)

// window is a measured interval of a closed-loop load: calls that start
// after Warmup and end before Warmup+Duration count.
type window struct {
	Warmup   time.Duration
	Duration time.Duration
}

// loadResult is what the workers of one load did in the window.
type loadResult struct {
	Ops       int             // calls that counted
	Total     int             // calls that would count, warm-up and tail included
	Idle      int             // calls in the window that returned nothing to count
	Latencies []time.Duration // of the calls that counted
	// Checkpoints are the durations of the checkpoints taken, warm-up and
	// tail included (runTrainers).
	Checkpoints []time.Duration
}

// runLoad has workers call op back to back, each waiting for its previous
// call (a closed loop, like trainers). op reports whether its call counts;
// the first error stops the load.
func runLoad(ctx context.Context, workers int, w window, op func(worker int) (bool, error)) (loadResult, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	start := time.Now()
	from, until := start.Add(w.Warmup), start.Add(w.Warmup+w.Duration)
	results := make([]loadResult, workers)
	var wg sync.WaitGroup
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := &results[i]
			for ctx.Err() == nil {
				began := time.Now()
				if !began.Before(until) {
					return
				}
				counts, err := op(i)
				ended := time.Now()
				if err != nil {
					cancel(err)
					return
				}
				if counts {
					r.Total++
				}
				switch {
				case began.Before(from) || ended.After(until):
				case counts:
					r.Ops++
					r.Latencies = append(r.Latencies, ended.Sub(began))
				default:
					r.Idle++
				}
			}
		}()
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return loadResult{}, err
	}
	var all loadResult
	for _, r := range results {
		all.Ops += r.Ops
		all.Total += r.Total
		all.Idle += r.Idle
		all.Latencies = append(all.Latencies, r.Latencies...)
	}
	return all, nil
}
