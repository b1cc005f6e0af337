package masterbench

import (
	"testing"
	"time"
)

func TestSummarise(t *testing.T) {
	ms := func(ns ...int) []time.Duration {
		var ds []time.Duration
		for _, n := range ns {
			ds = append(ds, time.Duration(n)*time.Millisecond)
		}
		return ds
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = 100 - i // reversed: summarise sorts
	}
	for _, tc := range []struct {
		name string
		in   []time.Duration
		want Latencies
	}{
		{"none", nil, Latencies{}},
		{"one", ms(7), Latencies{7 * time.Millisecond, 7 * time.Millisecond, 7 * time.Millisecond}},
		{"hundred", ms(hundred...), Latencies{50 * time.Millisecond, 99 * time.Millisecond, 100 * time.Millisecond}},
		{"outlier", ms(1, 1, 1, 1, 1, 1, 1, 1, 1, 900), Latencies{time.Millisecond, 900 * time.Millisecond, 900 * time.Millisecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := summarise(tc.in); got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
