package monitor

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trainmaster/master/internal/master"
)

// BenchmarkHooksPerTask measures what the monitor adds to one GetTask that
// finishes a task and dispatches the next, as the master calls it: Called,
// Finished, Dispatched and GetTaskServed, from many trainers at once. It is
// the CPU the side door's per-trainer figures cost per task, to set against
// the master's own (BenchmarkGetTaskLoopback in internal/master).
func BenchmarkHooksPerTask(b *testing.B) {
	for _, trainers := range []int{1, 64} {
		b.Run(fmt.Sprintf("trainers=%d", trainers), func(b *testing.B) {
			m := New(Config{})
			names := make([]string, trainers)
			for i := range names {
				names[i] = fmt.Sprintf("trainer-%d", i)
			}
			var next atomic.Int64 // the trainer and task of each goroutine's next call
			b.SetParallelism((trainers + 1) / 2)
			b.RunParallel(func(pb *testing.PB) {
				n := int(next.Add(1))
				name := names[n%trainers]
				task := n * 1_000_000 // each goroutine's tasks are its own
				for pb.Next() {
					now := time.Now()
					m.Called(name, now)
					m.Finished(name, master.TaskEvent{Index: task, Epoch: 1, Records: 10, At: now})
					task++
					m.Dispatched(name, master.TaskEvent{Index: task, Epoch: 1, Records: 10, At: now})
					m.GetTaskServed(time.Since(now), nil)
				}
			})
		})
	}
}
