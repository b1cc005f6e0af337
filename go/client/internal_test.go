package client

import (
	"fmt"
	"os"
	"reflect"
	"regexp"
	"testing"
	"time"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/etcdembed/etcdtest"
)

var defaultNameRE = regexp.MustCompile(fmt.Sprintf(`^%s-%d-[0-9a-f]{4}$`, regexp.QuoteMeta(hostname()), os.Getpid()))

func hostname() string {
	host, _ := os.Hostname()
	return host
}

func TestConfigDefaults(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Config
		want Config
	}{
		{"zero", Config{}, Config{MinBackoff: DefaultMinBackoff, MaxBackoff: DefaultMaxBackoff, Prefetch: DefaultPrefetch,
			DialTimeout: DefaultDialTimeout, CallTimeout: DefaultCallTimeout, ProgressInterval: wire.DefaultProgressInterval}},
		{"set", Config{MinBackoff: time.Millisecond, MaxBackoff: time.Second, Prefetch: 4, DialTimeout: 2, CallTimeout: 3, Name: "gpu7", ProgressInterval: time.Second},
			Config{MinBackoff: time.Millisecond, MaxBackoff: time.Second, Prefetch: 4, DialTimeout: 2, CallTimeout: 3, Name: "gpu7", ProgressInterval: time.Second}},
		{"no prefetch, max below min, no progress", Config{Prefetch: -1, MinBackoff: time.Minute, ProgressInterval: -1},
			Config{MinBackoff: time.Minute, MaxBackoff: time.Minute, Prefetch: 0, DialTimeout: DefaultDialTimeout, CallTimeout: DefaultCallTimeout,
				ProgressInterval: -1}},
	} {
		got := tc.in.withDefaults()
		if got.Log == nil {
			t.Errorf("%s: no logger", tc.name)
		}
		got.Log = nil
		if tc.in.Name == "" {
			if !defaultNameRE.MatchString(got.Name) {
				t.Errorf("%s: default name %q, want hostname-pid-xxxx", tc.name, got.Name)
			}
			got.Name = ""
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// TestDefaultNameOfACertificate: with a client certificate the default
// name begins with its common name, as a master started with
// -tls-client-ca wants; a name given is kept.
func TestDefaultNameOfACertificate(t *testing.T) {
	certs := etcdtest.GenerateCerts(t)
	withCert := Config{TLS: etcdtest.ClientTLS(t, certs)}
	want := regexp.MustCompile(fmt.Sprintf(`^%s-%d-[0-9a-f]{4}$`, regexp.QuoteMeta(etcdtest.ClientCommonName), os.Getpid()))
	if got := withCert.withDefaults().Name; !want.MatchString(got) {
		t.Errorf("default name with a certificate %q, want %s-pid-xxxx", got, etcdtest.ClientCommonName)
	}
	withCert.Name = "gpu7"
	if got := withCert.withDefaults().Name; got != "gpu7" {
		t.Errorf("name given %q, want gpu7", got)
	}
	noCert := Config{TLS: etcdtest.ClientTLSNoCert(t, certs)}
	if got := noCert.withDefaults().Name; !defaultNameRE.MatchString(got) {
		t.Errorf("default name without a certificate %q, want hostname-pid-xxxx", got)
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

// TestRangeOrderHoldsNoRecords: a range task's order is computed from its
// Start: nothing is allocated without a seed, the shuffle's ints with one.
func TestRangeOrderHoldsNoRecords(t *testing.T) {
	task := wire.Task{Index: 5, Epoch: 1, Start: 5000, End: 6000}
	if allocs := testing.AllocsPerRun(10, func() { trainingOrder(task, nil) }); allocs != 0 {
		t.Errorf("the order of a range task without a seed allocates %v times", allocs)
	}
	o := trainingOrder(task, nil)
	for i := range o.n {
		if rec := o.at(i); rec.Data != nil || rec.Index != 5000+int64(i) {
			t.Fatalf("position %d: %+v", i, rec)
		}
	}
	task.Seed = 9
	o = trainingOrder(task, nil)
	for i, off := range wire.Shuffle(1000, 9) {
		if rec := o.at(i); rec.Data != nil || rec.Index != 5000+int64(off) {
			t.Fatalf("position %d: %+v, want index %d", i, rec, 5000+off)
		}
	}
}
