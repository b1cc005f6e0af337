package client

import (
	"reflect"
	"testing"
	"time"
)

func TestConfigDefaults(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Config
		want Config
	}{
		{"zero", Config{}, Config{MinBackoff: DefaultMinBackoff, MaxBackoff: DefaultMaxBackoff, Prefetch: DefaultPrefetch,
			DialTimeout: DefaultDialTimeout, CallTimeout: DefaultCallTimeout, Name: defaultName()}},
		{"set", Config{MinBackoff: time.Millisecond, MaxBackoff: time.Second, Prefetch: 4, DialTimeout: 2, CallTimeout: 3, Name: "gpu7"},
			Config{MinBackoff: time.Millisecond, MaxBackoff: time.Second, Prefetch: 4, DialTimeout: 2, CallTimeout: 3, Name: "gpu7"}},
		{"no prefetch, max below min", Config{Prefetch: -1, MinBackoff: time.Minute},
			Config{MinBackoff: time.Minute, MaxBackoff: time.Minute, Prefetch: 0, DialTimeout: DefaultDialTimeout, CallTimeout: DefaultCallTimeout,
				Name: defaultName()}},
	} {
		got := tc.in.withDefaults()
		if got.Log == nil {
			t.Errorf("%s: no logger", tc.name)
		}
		got.Log = nil
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestBackoffDelays(t *testing.T) {
	b := &backoff{next: 10 * time.Millisecond, max: 50 * time.Millisecond}
	for i, full := range []time.Duration{10, 20, 40, 50, 50} {
		full *= time.Millisecond
		if d := b.delay(); d < full/2 || d > full {
			t.Errorf("delay %d: %v, want between %v and %v", i, d, full/2, full)
		}
	}
}
