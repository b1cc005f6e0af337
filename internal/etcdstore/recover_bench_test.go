package etcdstore

import (
	"runtime"
	"testing"
	"time"

	"github.com/trainmaster/master/internal/etcdembed/etcdtest"
	"github.com/trainmaster/master/internal/taskqueue"
)

// BenchmarkRecoverMillion measures what a new leader does before it serves
// a dataset of 1,000,000 chunks, one per task, every task with an entry in
// etcd (a pass nearly done): load the state and rebuild the queues. It
// reports the seconds and the heap it held at the end.
func BenchmarkRecoverMillion(b *testing.B) {
	const n = 1000000
	_, cli := etcdtest.Start(b)
	store, _ := lead(b, cli, "/recover")
	ds := syntheticDataset(b, n, 1)
	if err := store.SaveDataset(ctx, ds); err != nil {
		b.Fatal(err)
	}
	q, err := taskqueue.New(taskqueue.Config{}, ds.NumTasks(), ds.TaskRecords)
	if err != nil {
		b.Fatal(err)
	}
	var all taskqueue.Change
	for i := range n {
		_, epoch, ch, err := q.Dispatch(time.Now())
		if err != nil {
			b.Fatal(err)
		}
		if i%10 != 0 { // one in ten still pending
			_, ch, _ = q.Finish(ch.Records[0].Index, 0, epoch, time.Now())
		}
		all.Records = append(all.Records, ch.Records...)
	}
	if err := store.Commit(ctx, all); err != nil {
		b.Fatal(err)
	}
	all, q = taskqueue.Change{}, nil
	b.ResetTimer()
	for range b.N {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		start := time.Now()
		snap, err := store.Load(ctx)
		if err != nil {
			b.Fatal(err)
		}
		q, err := taskqueue.Restore(taskqueue.Config{}, snap.Dataset.NumTasks(), snap.Dataset.TaskRecords, snap.Pass, snap.Entries, time.Now())
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(time.Since(start).Seconds(), "s/recovery")
		snap = nil
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "MiB-held")
		if q.Count(taskqueue.Pending) != n/10 || q.Count(taskqueue.Done) != n-n/10 {
			b.Fatalf("restored %d pending, %d done", q.Count(taskqueue.Pending), q.Count(taskqueue.Done))
		}
	}
}
