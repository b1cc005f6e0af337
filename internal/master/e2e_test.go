package master_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/trainmaster/master/go/client"
	"github.com/trainmaster/master/go/recordio"
	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/dataset"
	"github.com/trainmaster/master/internal/master"
	"github.com/trainmaster/master/internal/master/mastertest"
	"github.com/trainmaster/master/internal/taskqueue"
	"github.com/trainmaster/master/internal/trainerport"
)

// consumption is what the trainers of an end-to-end run consumed: per pass
// and task, the digest of each complete consumption of the task.
type consumption struct {
	mu    sync.Mutex
	tasks map[[2]int][]client.Digest // {pass, task}
}

func (c *consumption) add(pass, task int, d client.Digest) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tasks[[2]int{pass, task}] = append(c.tasks[[2]int{pass, task}], d)
}

// copyFixtures copies the reference RecordIO files into dir.
func copyFixtures(t *testing.T, dir string) {
	t.Helper()
	paths, err := filepath.Glob("../../go/recordio/testdata/*.recordio")
	if err != nil || len(paths) == 0 {
		t.Fatalf("fixtures: %v %v", paths, err)
	}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(p)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// generate writes files of 40 chunks of 25 records each.
func generate(t *testing.T, dir string, files int) {
	t.Helper()
	for f := range files {
		path := filepath.Join(dir, fmt.Sprintf("gen-%02d.recordio", f))
		record := func(i int) []byte { return fmt.Appendf(nil, "gen %02d record %04d", f, i) }
		if err := recordio.WriteFile(path, 1000, record, recordio.WithMaxChunkBytes(25*len(record(0)))); err != nil {
			t.Fatal(err)
		}
	}
}

// datasetDigest reads every record of the dataset directly.
func datasetDigest(t *testing.T, patterns []string) client.Digest {
	t.Helper()
	files, err := dataset.Expand(patterns)
	if err != nil {
		t.Fatal(err)
	}
	d, err := client.DigestRecords(recordio.ScanFiles(files...))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestEndToEnd runs a master and 8 trainers over loopback TCP for 3 passes;
// one trainer stalls on a task for good and another fails one. Every task of
// every pass must be consumed, with exactly the dataset's records, and the
// stalled task must come back after the adaptive timeout, not the 10-minute
// default.
func TestEndToEnd(t *testing.T) {
	const trainers, passes = 8, 3
	dir := t.TempDir()
	copyFixtures(t, dir)
	generate(t, dir, 6)
	patterns := []string{filepath.Join(dir, "*.recordio")}

	log := logrus.New()
	log.SetOutput(io.Discard)
	svc, err := master.New(master.Config{ChunksPerTask: 3, Log: log, Queue: taskqueue.Config{
		Passes: passes, TimeoutMin: 300 * time.Millisecond, // Timeout stays the 10-minute default
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	addr := mastertest.Serve(t, svc, trainerport.Config{Log: log})

	// The dataset has 4 fixtures (8, 8, 8 and 4 chunks) and 6 generated
	// files of 40 chunks: 268 chunks, 90 tasks of 3 chunks (the last of 1).
	files, _ := dataset.Expand(patterns)
	ds, err := dataset.Build(patterns, 3)
	if err != nil {
		t.Fatal(err)
	}
	numTasks := ds.NumTasks()
	stallTask, failTask := numTasks-10, numTasks/2 // the stalled one comes after many finishes

	var (
		mu           sync.Mutex
		stalledAt    time.Time
		redispatched time.Duration
		stalls       int
		failures     int
	)
	stallCtx, releaseStall := context.WithCancel(context.Background())
	defer releaseStall()
	inject := func(task wire.Task) error {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case task.Pass == 0 && task.Index == stallTask && task.Epoch == 1:
			stalls++
			stalledAt = time.Now()
			mu.Unlock()
			<-stallCtx.Done() // this trainer never comes back
			mu.Lock()
			return stallCtx.Err()
		case task.Pass == 0 && task.Index == stallTask:
			redispatched = time.Since(stalledAt)
		case task.Pass == 1 && task.Index == failTask && task.Epoch == 1:
			failures++
			return fmt.Errorf("injected failure of task %d", task.Index)
		}
		return nil
	}

	consumed := &consumption{tasks: map[[2]int][]client.Digest{}}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	errs := make(chan error, trainers)
	var wg sync.WaitGroup
	for i := range trainers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- runTrainer(ctx, addr, patterns, inject, consumed, i)
		}()
	}
	// Seven trainers end at "all passes done"; the staller is stuck in its
	// injected stall until released.
	for range trainers - 1 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	releaseStall()
	<-errs
	wg.Wait()

	if stalls != 1 || failures != 1 {
		t.Fatalf("%d stalls and %d failures injected, want 1 each", stalls, failures)
	}
	if redispatched == 0 || redispatched > 30*time.Second {
		t.Fatalf("stalled task redispatched after %v, want the adaptive timeout", redispatched)
	}
	t.Logf("%d files, %d tasks; stalled task %d came back after %v", len(files), numTasks, stallTask, redispatched.Round(time.Millisecond))

	want := datasetDigest(t, patterns)
	for pass := range passes {
		var got client.Digest
		for task := range numTasks {
			ds := consumed.tasks[[2]int{pass, task}]
			if len(ds) == 0 {
				t.Fatalf("pass %d: task %d was never consumed", pass, task)
			}
			for _, d := range ds[1:] {
				if d != ds[0] {
					t.Fatalf("pass %d: task %d consumed with different records", pass, task)
				}
			}
			if len(ds) > 1 {
				t.Logf("pass %d: task %d consumed %d times", pass, task, len(ds))
			}
			got.Combine(ds[0])
		}
		if got != want {
			t.Fatalf("pass %d consumed %+v, the dataset is %+v", pass, got, want)
		}
	}
	if st, err := svc.Status(context.Background()); err != nil || !st.AllDone || st.Pass != passes {
		t.Fatalf("master status %+v, %v", st, err)
	}
}

// runTrainer consumes tasks until all passes are done, recording the digest
// of each task consumed to its last record.
func runTrainer(ctx context.Context, addr string, patterns []string, inject func(wire.Task) error, consumed *consumption, id int) error {
	c := client.New(client.Static(addr), client.Config{Inject: inject, MinBackoff: 10 * time.Millisecond, MaxBackoff: 200 * time.Millisecond})
	defer c.Close()
	if err := c.ReportDataset(ctx, patterns); err != nil {
		return fmt.Errorf("trainer %d: %w", id, err)
	}
	var d client.Digest
	for rec, err := range c.Records(ctx) {
		if err != nil {
			return fmt.Errorf("trainer %d: %w", id, err)
		}
		d.Add(rec.Data)
		if rec.Last {
			consumed.add(rec.Pass, rec.Task, d)
			d = client.Digest{}
		}
	}
	return nil
}
