package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/trainmaster/master/go/client"
	"github.com/trainmaster/master/go/discovery"
	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/etcdembed/etcdtest"
)

// evalLog counts how often each index of an index-range dataset was
// trained, per pass.
type evalLog struct {
	mu   sync.Mutex
	seen map[int][]int // pass -> index -> times
	size int
}

func (e *evalLog) add(pass int, index int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.seen[pass] == nil {
		e.seen[pass] = make([]int, e.size)
	}
	e.seen[pass][index]++
}

// runEvaluators runs n in-process trainers of the dataset eval for rounds
// rounds: each one, when its loop ends, asks for the next round (waiting
// while the current one runs) and trains it.
func runEvaluators(ctx context.Context, n, rounds int, endpoints []string, log *evalLog) chan error {
	errs := make(chan error, n)
	for i := range n {
		go func() { errs <- evaluate(ctx, i, rounds, endpoints, log) }()
	}
	return errs
}

func evaluate(ctx context.Context, i, rounds int, endpoints []string, log *evalLog) error {
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second})
	if err != nil {
		return err
	}
	defer cli.Close()
	c := client.New(discovery.NewResolver(cli, ""), client.Config{Dataset: "eval", Name: fmt.Sprintf("evaluator-%d", i),
		MinBackoff: 20 * time.Millisecond, MaxBackoff: 300 * time.Millisecond, CallTimeout: 5 * time.Second, ProgressInterval: 200 * time.Millisecond})
	defer c.Close()
	for round := range rounds {
		for round > 0 {
			_, err := c.StartRound(ctx, round)
			if err == nil {
				break
			}
			if !wire.Is(err, wire.TextRoundRunning) {
				return fmt.Errorf("evaluator %d: round %d: %w", i, round, err)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
		}
		for rec, err := range c.Records(ctx) {
			if err != nil {
				return fmt.Errorf("evaluator %d: %w", i, err)
			}
			if rec.Data != nil {
				return fmt.Errorf("evaluator %d: a record of an index range with data", i)
			}
			log.add(rec.Pass, rec.Index)
			if rec.Index%4 == 0 {
				time.Sleep(time.Millisecond) // a round takes a few seconds: the kill falls in the first
			}
		}
	}
	return nil
}

// writeDatasets writes a -datasets file.
func writeDatasets(t *testing.T, entries ...map[string]any) string {
	t.Helper()
	b, err := json.Marshal(entries)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "datasets.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestNamedDatasetsThroughAFailover: a job declares two datasets with
// -datasets: train (files, two passes) and eval (an index range, one pass a
// round). Three trainers train while two evaluators run eval twice, and the
// leader is killed with SIGKILL in the middle. Every task of train is
// consumed in each pass and every index of eval in each round; `master
// inspect` shows both; a master restarted on the stored state (without
// -datasets) serves both as stored, and refuses a declaration that
// disagrees, naming both.
func TestNamedDatasetsThroughAFailover(t *testing.T) {
	const trainers, evaluators, rounds, evalRecords = 3, 2, 2, 20000
	srv, _ := etcdtest.Start(t)
	endpoints := strings.Join(srv.Endpoints(), ",")
	pattern := writeDataset(t, 4) // 200 chunks: 100 tasks of 2
	decl := writeDatasets(t,
		map[string]any{"name": "train", "patterns": []string{pattern}, "chunks_per_task": 2, "passes": 2},
		map[string]any{"name": "eval", "records": evalRecords, "records_per_task": 500, "passes": 1})
	args := []string{"-endpoints", endpoints, "-datasets", decl, "-task-timeout-min", "1s"}
	a := startMaster(t, args...)
	addrA := a.awaitServing(20 * time.Second)
	b := startMaster(t, args...)
	b.awaitLog("standing by", 20*time.Second)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	log := &dispatchLog{consumed: map[[2]int]int{}}
	trained := runTrainers(ctx, t, trainers, srv.Endpoints(), pattern, log, 5*time.Millisecond)
	evals := &evalLog{seen: map[int][]int{}, size: evalRecords}
	evaluated := runEvaluators(ctx, evaluators, rounds, srv.Endpoints(), evals)

	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var ev wire.Status
		if err := call(t, addrA, "Master.DatasetStatus", "eval", &ev); err != nil {
			t.Fatal(err)
		}
		if st := status(t, addrA); st.Pass == 0 && st.Done >= 30 && ev.Done >= 1 && ev.Round == 0 && !ev.AllDone {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the job did not get going: train %+v, eval %+v", status(t, addrA), ev)
		}
	}
	a.signal(syscall.SIGKILL)
	addrB := b.awaitServing(10 * time.Second)
	for range trainers {
		if err := <-trained; err != nil {
			t.Fatal(err)
		}
	}
	for range evaluators {
		if err := <-evaluated; err != nil {
			t.Fatal(err)
		}
	}
	for p := range 2 {
		for task := range 100 {
			if log.consumed[[2]int{p, task}] == 0 {
				t.Errorf("train, pass %d: task %d never consumed", p, task)
			}
		}
	}
	twice := 0
	for pass := range rounds {
		for i, n := range evals.seen[pass] {
			if n == 0 {
				t.Errorf("eval, pass %d: index %d never trained", pass, i)
			}
			twice += max(n-1, 0)
		}
	}
	if len(evals.seen) != rounds {
		t.Errorf("eval trained in passes %v, want the %d of its rounds", slices.Sorted(maps.Keys(evals.seen)), rounds)
	}
	t.Logf("eval: %d indexes trained twice over %d rounds, the leader killed in the first", twice, rounds)

	var ev wire.Status
	if err := call(t, addrB, "Master.DatasetStatus", "eval", &ev); err != nil || ev.Round != rounds-1 || !ev.AllDone || ev.Tasks != 40 {
		t.Fatalf("eval's status %+v, %v; want round %d over, 40 tasks", ev, err, rounds-1)
	}
	out, err := exec.Command(binPath, "inspect", "-json", "-endpoints", endpoints).Output()
	if err != nil {
		t.Fatalf("inspect: %v", err)
	}
	var in inspection
	if err := json.Unmarshal(out, &in); err != nil {
		t.Fatal(err)
	}
	if in.Name != "train" || in.Dataset == nil || in.Pass != 2 || len(in.Datasets) != 1 || in.Datasets[0].Name != "eval" ||
		in.Datasets[0].Round != 1 || in.Datasets[0].Dataset.RecordsPerTask != 500 || in.Datasets[0].Pass != 2 {
		t.Fatalf("inspect -json:\n%s", out)
	}

	// A master without -datasets restarted on the stored state serves
	// both; a trainer's declaration that disagrees is refused, naming both.
	b.signal(syscall.SIGTERM)
	<-b.exited
	c := startMaster(t, "-endpoints", endpoints)
	addrC := c.awaitServing(20 * time.Second)
	if err := call(t, addrC, "Master.DatasetStatus", "eval", &ev); err != nil || ev.Round != 1 || !ev.AllDone || strings.Join(ev.Datasets, ",") != "eval,train" {
		t.Fatalf("restarted: eval %+v, %v", ev, err)
	}
	err = call(t, addrC, "Master.DeclareDataset", wire.Dataset{Name: "eval", Records: 30000, RecordsPerTask: 500}, new(int))
	if err == nil || !strings.Contains(err.Error(), `already reported as "eval": 20000 records in tasks of 500, passes a round: 1`) ||
		!strings.Contains(err.Error(), `this call reports "eval": 30000 records in tasks of 500`) {
		t.Fatalf("a declaration that disagrees: %v", err)
	}
	c.signal(syscall.SIGTERM)
	<-c.exited

	// A master declaring it otherwise refuses to serve, naming both.
	other := writeDatasets(t, map[string]any{"name": "eval", "records": 30000, "records_per_task": 500})
	cmd := exec.Command(binPath, "-addr", "127.0.0.1:0", "-ttl", "2", "-endpoints", endpoints, "-datasets", other)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err == nil || !strings.Contains(stderr.String(), `the store holds the dataset "eval": 20000 records in tasks of 500, passes a round: 1, this master declares "eval": 30000 records`) {
		t.Fatalf("a master declaring eval otherwise: %v\n%s", err, stderr.String())
	}
}
