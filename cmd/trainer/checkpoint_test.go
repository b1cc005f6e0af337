package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/trainmaster/master/go/client/clienttest"
	"github.com/trainmaster/master/internal/master"
	"github.com/trainmaster/master/internal/master/mastertest"
	"github.com/trainmaster/master/internal/taskqueue"
	"github.com/trainmaster/master/internal/trainerport"
	"github.com/trainmaster/master/internal/trainerport/porttest"
)

// TestGroupResumesFromItsCheckpoint: three ranks against a real master
// checkpoint every 2 batches; rank 1 stalls mid-pass, the others wait for
// it at their next checkpoint, and the group is stopped; restarted with
// -resume from
// the newest checkpoint every rank recorded, the group trains the rest.
// What the first run trained up to that checkpoint and everything the
// second trained hold every record of each pass exactly once.
func TestGroupResumesFromItsCheckpoint(t *testing.T) {
	dir := t.TempDir()
	clienttest.WriteFiles(t, dir, 3, 30, 5) // 90 records in 18 chunks
	log := logrus.New()
	log.SetOutput(io.Discard)
	svc, err := master.New(master.Config{ChunksPerTask: 1, Log: log, CheckpointWait: 2 * time.Second, Queue: taskqueue.Config{Passes: 2}})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	p := porttest.Start(t, trainerport.Config{}, func(srv *trainerport.Server) error {
		return mastertest.Register(srv, svc)
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rank := func(r int, run string, extra ...string) []string {
		return append([]string{"-addr", p.Addr, "-name", fmt.Sprintf("rank-%d", r), "-ranks", "3", "-rank", strconv.Itoa(r), "-batch", "4",
			"-checkpoint-every", "2", "-restart", run, "-trace", filepath.Join(dir, fmt.Sprintf("%s-%d.trace", run, r)), "-dataset", dir + "/part-*.recordio"}, extra...)
	}
	firstCtx, stopFirst := context.WithCancel(ctx)
	wait := startTrainers(firstCtx, rank(0, "a"), rank(1, "a", "-stall-after", "3"), rank(2, "a"))
	// Once every rank recorded a checkpoint, the group is stopped: the
	// call returns on every rank together, but each writes its trace line
	// after, so rank 0's line alone does not mean the others wrote theirs.
	deadline := time.Now().Add(30 * time.Second)
	for newestCommon(dir, "a") == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the first run never recorded a checkpoint on every rank")
		}
		time.Sleep(10 * time.Millisecond)
	}
	stopFirst()
	for i, r := range wait() {
		if r.code == 0 {
			t.Errorf("rank %d of the first run ended well: %s", i, r.stdout)
		}
	}
	id := newestCommon(dir, "a")
	results := startTrainers(ctx, rank(0, "b", "-resume", strconv.FormatInt(id, 10)), rank(1, "b", "-resume", strconv.FormatInt(id, 10)), rank(2, "b", "-resume", strconv.FormatInt(id, 10)))()
	for i, r := range results {
		if r.code != 0 {
			t.Fatalf("rank %d of the second run: %d\n%s\n%s", i, r.code, r.stdout, r.stderr)
		}
	}
	model := map[string]int{}
	for r := range 3 {
		for _, rec := range traceUpTo(t, filepath.Join(dir, fmt.Sprintf("a-%d.trace", r)), id) {
			model[rec]++
		}
		for _, rec := range traceUpTo(t, filepath.Join(dir, fmt.Sprintf("b-%d.trace", r)), -1) {
			model[rec]++
		}
	}
	if len(model) != 180 {
		t.Errorf("%d records of the 2 passes in the model, want 180", len(model))
	}
	for rec, n := range model {
		if n != 1 {
			t.Errorf("record %q trained %d times into the model", rec, n)
		}
	}
}

// newestCommon is the newest checkpoint every rank of run recorded, 0 if
// there is none.
func newestCommon(dir, run string) int64 {
	var common map[int64]int
	for r := range 3 {
		seen := map[int64]int{}
		b, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%s-%d.trace", run, r)))
		for _, line := range strings.Split(string(b), "\n") {
			if id, ok := strings.CutPrefix(line, "checkpoint "); ok {
				n, _ := strconv.ParseInt(id, 10, 64)
				seen[n] = 1
			}
		}
		if common == nil {
			common = seen
		}
		for id := range common {
			if seen[id] == 0 {
				delete(common, id)
			}
		}
	}
	var newest int64
	for id := range common {
		newest = max(newest, id)
	}
	return newest
}

// traceUpTo returns the records of a trace ("pass task position") up to
// the line of checkpoint id (-1: all).
func traceUpTo(t *testing.T, path string, id int64) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var recs []string
	for _, line := range strings.Split(string(b), "\n") {
		if line == fmt.Sprintf("checkpoint %d", id) {
			return recs
		}
		if line != "" && !strings.HasPrefix(line, "checkpoint ") {
			recs = append(recs, line)
		}
	}
	if id >= 0 {
		t.Fatalf("%s has no checkpoint %d", path, id)
	}
	return recs
}
