package taskqueue

import (
	"runtime"
	"testing"
	"time"
)

func TestSlotKeepsEveryField(t *testing.T) {
	for _, e := range []Entry{
		{},
		{Pass: 3, Queue: Pending, Epoch: 2, Timeouts: 1, Seq: 1 << 40,
			Dispatched: t0.Add(time.Nanosecond), Deadline: t0.Add(10 * time.Minute), Error: "timed out"},
		{Pass: 1<<31 - 1, Queue: Failed, Epoch: 1<<31 - 1, Timeouts: 9, Seq: -1, Error: "bad block"},
	} {
		if got := toSlot(e).entry(e.Error); got != e {
			t.Errorf("%+v came back as %+v", e, got)
		}
	}
}

// BenchmarkQueuesMemory reports what the queues of a million tasks hold,
// after every task has been dispatched once.
func BenchmarkQueuesMemory(b *testing.B) {
	const tasks = 1000000
	for range b.N {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		q, err := New(Config{}, tasks, tenRecords)
		if err != nil {
			b.Fatal(err)
		}
		for range tasks {
			if _, _, _, err := q.Dispatch(t0, ""); err != nil {
				b.Fatal(err)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/tasks, "heap-bytes/task")
		runtime.KeepAlive(q)
	}
}
