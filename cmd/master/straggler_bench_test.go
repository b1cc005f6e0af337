package main

import (
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trainmaster/master/internal/etcdembed/etcdtest"
)

// BenchmarkSlowTrainer measures what one slow trainer costs a pass: a
// master on its own etcd serves 100 tasks of 1 s (20 records of 50 ms) to
// 8 cmd/trainer processes, and the pass's time (from the trainers' start
// to the last one's exit) is measured with every trainer alike, then with
// trainer 0 ten times slower. The ratio is what issue 12's stragglers
// target (at most 1.25 with splits); the master's defaults apply
// (-task-timeout-min 10s, prefetch 1).
//
//	go test -run '^$' -bench SlowTrainer -benchtime 1x ./cmd/master
func BenchmarkSlowTrainer(b *testing.B) {
	pattern := writeDataset(b, 2) // 100 chunks of 20 records: 100 tasks
	var alike time.Duration
	for _, slow := range []float64{1, 10} {
		b.Run(fmt.Sprintf("slow=%gx", slow), func(b *testing.B) {
			var took time.Duration
			for range b.N {
				took += passTime(b, pattern, slow)
			}
			took /= time.Duration(b.N)
			b.ReportMetric(took.Seconds(), "pass-s")
			if slow == 1 {
				alike = took
			} else if alike > 0 {
				b.ReportMetric(took.Seconds()/alike.Seconds(), "x-alike")
			}
		})
	}
}

// passTime runs one pass with 8 trainers, trainer 0 slow times slower, and
// returns how long it took.
func passTime(b *testing.B, pattern string, slow float64) time.Duration {
	b.Helper()
	srv, _ := etcdtest.Start(b)
	endpoints := strings.Join(srv.Endpoints(), ",")
	master := exec.Command(binPath, "-endpoints", endpoints, "-addr", "127.0.0.1:0", "-ttl", "2", "-dataset", pattern, "-chunks-per-task", "1")
	if err := master.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		master.Process.Kill()
		master.Wait()
	}()
	const delay = 50 * time.Millisecond
	trainer := trainerBinary(b)
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		d := delay
		if i == 0 {
			d = time.Duration(float64(delay) * slow)
		}
		cmd := exec.Command(trainer, "-endpoints", endpoints, "-name", fmt.Sprintf("bench-%d", i), "-record-delay", d.String())
		wg.Add(1)
		go func() {
			defer wg.Done()
			if out, err := cmd.CombinedOutput(); err != nil {
				errs <- fmt.Errorf("trainer %d: %v\n%s", i, err, out)
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	return took
}
