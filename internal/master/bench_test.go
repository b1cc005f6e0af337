package master

import (
	"fmt"
	"net/rpc"
	"sync"
	"testing"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/taskqueue"
)

// BenchmarkGetTaskLoopback measures GetTask round trips, each carrying the
// finish of the caller's previous task, over loopback TCP with the in-memory
// store; callers each have their own connection. At the end of each pass
// callers meet "no task available" until the last tasks come back; those
// calls are not counted.
func BenchmarkGetTaskLoopback(b *testing.B) {
	pattern := writeDataset(b, b.TempDir(), 10, 1000) // 10,000 chunks: pass ends are rare
	for _, callers := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) {
			s, err := New(Config{ChunksPerTask: 1, Log: quietLog(), Queue: taskqueue.Config{Passes: 1 << 30}})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			addr := startServerB(b, s)
			clients := make([]*rpc.Client, callers)
			for i := range clients {
				if clients[i], err = rpc.Dial("tcp", addr); err != nil {
					b.Fatal(err)
				}
				defer clients[i].Close()
			}
			var dummy int
			if err := clients[0].Call("Master.ReportDataset", []string{pattern}, &dummy); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			var wg sync.WaitGroup
			per := b.N / callers
			for i, c := range clients {
				n := per
				if i == 0 {
					n += b.N % callers
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					var prev wire.Task
					for got := 0; got < n; {
						var next wire.Task
						err := c.Call("Master.GetTask", prev, &next)
						prev = next // the zero Task after an error: the finish was recorded
						switch {
						case wire.Is(err, wire.TextNoTask): // the end of a pass: others hold the last tasks
						case err != nil:
							b.Error(err)
							return
						default:
							got++
						}
					}
				}()
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tasks/s")
		})
	}
}
