package etcdstore

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/trainmaster/master/internal/etcdembed/etcdtest"
	"github.com/trainmaster/master/internal/taskqueue"
)

// recoverEndpoints is the environment variable through which
// BenchmarkRecoverMillion gives TestRecoverProcess the etcd to recover from.
const (
	recoverEndpoints = "ETCDSTORE_RECOVER_ENDPOINTS"
	recoverNamespace = "/recover"
	recoverTasks     = 1000000
)

// BenchmarkRecoverMillion measures what a new leader does before it serves
// a dataset of 1,000,000 chunks, one per task, every task with an entry of
// the current pass in etcd (a pass nearly done: one task in ten pending,
// the others done): load the state and rebuild the queues. The recovering
// master is a process of its own (this test binary running
// TestRecoverProcess), so that its peak resident memory is not the
// embedded etcd's. It reports the seconds, the heap the restored state
// holds, the heap the process obtained from the system (its heap's high
// water mark) and the process's peak RSS (VmHWM of /proc/self/status).
// Run it without -race:
//
//	go test -run '^$' -bench RecoverMillion -benchtime 1x ./internal/etcdstore/
func BenchmarkRecoverMillion(b *testing.B) {
	const n = recoverTasks
	srv, cli := etcdtest.Start(b)
	store, _ := lead(b, cli, recoverNamespace)
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
		_, epoch, ch, err := q.Dispatch(time.Now(), "")
		if err != nil {
			b.Fatal(err)
		}
		if i%10 != 0 { // one in ten still pending
			_, ch, _ = q.Finish(ch.Records[0].Index, 0, epoch, "", time.Now())
		}
		all.Records = append(all.Records, ch.Records...)
	}
	if len(all.Records) != n {
		b.Fatalf("%d entries for %d tasks", len(all.Records), n)
	}
	if err := store.Commit(ctx, 0, all); err != nil {
		b.Fatal(err)
	}
	all, q, ds = taskqueue.Change{}, nil, nil
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		cmd := exec.Command(exe, "-test.run=^TestRecoverProcess$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), recoverEndpoints+"="+strings.Join(srv.Endpoints(), ","))
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.Fatalf("recovering process: %v\n%s", err, out)
		}
		metrics, err := parseRecovered(out)
		if err != nil {
			b.Fatalf("%v\n%s", err, out)
		}
		for _, unit := range []string{"s/recovery", "MiB-heap-held", "MiB-heap-sys", "MiB-VmHWM"} {
			b.ReportMetric(metrics[unit], unit)
		}
	}
}

// parseRecovered reads the line "recovered: unit=value ..." that
// TestRecoverProcess prints.
func parseRecovered(out []byte) (map[string]float64, error) {
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "recovered:")
		if !ok {
			continue
		}
		metrics := map[string]float64{}
		for _, field := range strings.Fields(line) {
			unit, value, _ := strings.Cut(field, "=")
			v, err := strconv.ParseFloat(value, 64)
			if err != nil {
				return nil, fmt.Errorf("recovered line %q: %v", line, err)
			}
			metrics[unit] = v
		}
		return metrics, nil
	}
	return nil, fmt.Errorf("no recovered line")
}

// TestRecoverProcess is the recovering master of BenchmarkRecoverMillion,
// which runs it in a process of its own; it is skipped otherwise.
func TestRecoverProcess(t *testing.T) {
	endpoints := os.Getenv(recoverEndpoints)
	if endpoints == "" {
		t.Skip("run by BenchmarkRecoverMillion")
	}
	cli := etcdtest.NewClient(t, strings.Split(endpoints, ","))
	store := New(Config{Client: cli, Namespace: recoverNamespace})
	start := time.Now()
	snap, err := store.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	q, err := taskqueue.Restore(taskqueue.Config{}, snap.Dataset.NumTasks(), snap.Dataset.TaskRecords, snap.Pass, snap.Entries, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if q.Count(taskqueue.Pending) != recoverTasks/10 || q.Count(taskqueue.Done) != recoverTasks-recoverTasks/10 {
		t.Fatalf("restored %d pending, %d done", q.Count(taskqueue.Pending), q.Count(taskqueue.Done))
	}
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	hwm, err := vmHWM()
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("recovered: s/recovery=%.3f MiB-heap-held=%.1f MiB-heap-sys=%.1f MiB-VmHWM=%.1f\n",
		took.Seconds(), float64(m.HeapAlloc)/(1<<20), float64(m.HeapSys)/(1<<20), float64(hwm)/(1<<20))
	runtime.KeepAlive(q)
	runtime.KeepAlive(snap.Dataset)
}

// vmHWM returns the peak resident set size of this process, in bytes.
func vmHWM() (int64, error) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(status)) {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/self/status")
}
