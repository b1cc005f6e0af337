package master_test

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/trainmaster/master/go/client"
	"github.com/trainmaster/master/internal/master"
	"github.com/trainmaster/master/internal/master/mastertest"
	"github.com/trainmaster/master/internal/taskqueue"
	"github.com/trainmaster/master/internal/trainerport"
)

// TestProgressResumesTask: a go/client loop that stops in the middle of a
// task reports how far it got; when the task is handed out again (here
// because the first trainer is gone: its grace passes) the next trainer
// starts at that record, and the records before it are not trained twice.
func TestProgressResumesTask(t *testing.T) {
	dir := t.TempDir()
	generate(t, dir, 1) // 40 chunks of 25 records
	patterns := []string{filepath.Join(dir, "*.recordio")}
	log := logrus.New()
	log.SetOutput(io.Discard)
	svc, err := master.New(master.Config{ChunksPerTask: 40, Log: log, TrainerGrace: 50 * time.Millisecond,
		Queue: taskqueue.Config{Timeout: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	addr := mastertest.Serve(t, svc, trainerport.Config{Log: log})
	cfg := client.Config{MinBackoff: 5 * time.Millisecond, MaxBackoff: 50 * time.Millisecond, ProgressInterval: time.Hour}

	first := client.New(client.Static(addr), withName(cfg, "first"))
	if err := first.ReportDataset(context.Background(), patterns); err != nil {
		t.Fatal(err)
	}
	const stopAt = 377
	var seen [][]byte
	for r, err := range first.Records(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, append([]byte(nil), r.Data...))
		if len(seen) == stopAt {
			break // stops cleanly: the loop reports 377 records trained
		}
	}
	first.Close() // and goes away: its task comes back after the grace

	second := client.New(client.Static(addr), withName(cfg, "second"))
	defer second.Close()
	for r, err := range second.Records(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, append([]byte(nil), r.Data...))
	}
	if len(seen) != 1000 {
		t.Fatalf("%d records trained in all, want the task's 1000 once", len(seen))
	}
	for i, data := range seen {
		if want := fmt.Sprintf("gen 00 record %04d", i); string(data) != want {
			t.Fatalf("record %d is %q, want %q", i, data, want)
		}
	}
}

func withName(cfg client.Config, name string) client.Config {
	cfg.Name = name
	return cfg
}

// TestSupersededTaskIsDropped: a trainer whose task timed out and went to
// another trainer learns it from the answer to its next progress report,
// and stops training the task instead of training all of it again.
func TestSupersededTaskIsDropped(t *testing.T) {
	dir := t.TempDir()
	generate(t, dir, 1) // 40 chunks of 25 records: one task
	patterns := []string{filepath.Join(dir, "*.recordio")}
	log := logrus.New()
	log.SetOutput(io.Discard)
	svc, err := master.New(master.Config{ChunksPerTask: 40, Log: log,
		Queue: taskqueue.Config{Timeout: 300 * time.Millisecond, TimeoutMin: 300 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	addr := mastertest.Serve(t, svc, trainerport.Config{Log: log})
	cfg := client.Config{MinBackoff: 5 * time.Millisecond, MaxBackoff: 50 * time.Millisecond, ProgressInterval: 50 * time.Millisecond}

	slow := client.New(client.Static(addr), withName(cfg, "slow"))
	defer slow.Close()
	if err := slow.ReportDataset(context.Background(), patterns); err != nil {
		t.Fatal(err)
	}
	fast := client.New(client.Static(addr), withName(cfg, "fast"))
	defer fast.Close()
	slowTrained, slowStarted := make(chan int, 1), make(chan struct{})
	go func() {
		n := 0
		for _, err := range slow.Records(context.Background()) {
			if err != nil {
				break
			}
			if n++; n == 1 {
				close(slowStarted)
			}
			time.Sleep(2 * time.Millisecond) // 2 s for the task: it times out after 300 ms
		}
		slowTrained <- n
	}()
	<-slowStarted // the slow trainer holds the task
	fastTrained := 0
	for _, err := range fast.Records(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		fastTrained++
	}
	n := <-slowTrained
	if n == 0 || n >= 1000 || fastTrained+n < 1000 {
		t.Fatalf("the slow trainer trained %d records of the task, the fast one %d: want the slow one to stop early", n, fastTrained)
	}
	t.Logf("slow trainer stopped after %d records; the fast one trained %d", n, fastTrained)
}
