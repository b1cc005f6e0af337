package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trainmaster/master/go/client"
	"github.com/trainmaster/master/go/client/clienttest"
	"github.com/trainmaster/master/go/recordio"
	"github.com/trainmaster/master/go/wire"
)

// result is one trainer run in-process.
type result struct {
	code           int
	stdout, stderr string
}

func runTrainer(ctx context.Context, args ...string) result {
	var out, errOut bytes.Buffer
	code := run(ctx, args, &out, &errOut)
	return result{code, out.String(), errOut.String()}
}

// startTrainers runs one trainer per argument list, concurrently.
func startTrainers(ctx context.Context, argLists ...[]string) func() []result {
	results := make([]result, len(argLists))
	var wg sync.WaitGroup
	for i, args := range argLists {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = runTrainer(ctx, args...)
		}()
	}
	return func() []result { wg.Wait(); return results }
}

// fixture is a fake master and the dataset files it will serve.
type fixture struct {
	m       *clienttest.Master
	pattern string
	want    client.Digest // of the whole dataset, read directly
}

func newFixture(t *testing.T, opt clienttest.Options) *fixture {
	t.Helper()
	checkGoroutines(t)
	dir := t.TempDir()
	paths, _ := clienttest.WriteFiles(t, dir, 3, 30, 5) // 18 chunks
	want, err := client.DigestRecords(recordio.ScanFiles(paths...))
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{m: clienttest.Start(t, opt), pattern: dir + "/part-*.recordio", want: want}
}

// sumPasses parses the -json lines of every trainer and adds them up by
// pass; the per-task lines must add up to the same as the per-pass lines.
func sumPasses(t *testing.T, results []result) map[int]client.Digest {
	t.Helper()
	sums, taskSums := map[int]client.Digest{}, map[int]client.Digest{}
	for _, r := range results {
		for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
			if line == "" {
				continue
			}
			var p passLine
			if err := json.Unmarshal([]byte(line), &p); err != nil {
				t.Fatalf("bad line %q: %v", line, err)
			}
			var d client.Digest
			if _, err := fmt.Sscanf(p.Digest, "%016x", &d.Sum); err != nil {
				t.Fatalf("bad digest in %q", line)
			}
			d.Records, d.Bytes = p.Records, p.Bytes
			into := sums
			if p.Task != nil {
				into = taskSums
			}
			s := into[p.Pass]
			s.Combine(d)
			into[p.Pass] = s
		}
	}
	for pass, d := range sums {
		if taskSums[pass] != d {
			t.Errorf("pass %d: task lines add up to %+v, pass lines to %+v", pass, taskSums[pass], d)
		}
	}
	return sums
}

func (f *fixture) checkPasses(t *testing.T, results []result, passes int) {
	t.Helper()
	sums := sumPasses(t, results)
	if len(sums) != passes {
		t.Errorf("%d passes printed, want %d", len(sums), passes)
	}
	for p := range passes {
		if sums[p] != f.want {
			t.Errorf("pass %d: trainers add up to %+v, the dataset is %+v", p, sums[p], f.want)
		}
	}
}

func TestTrainersAddUpToTheDataset(t *testing.T) {
	f := newFixture(t, clienttest.Options{Passes: 2, ChunksPerTask: 2})
	addr := "-addr=" + f.m.Addr()
	results := startTrainers(context.Background(),
		[]string{addr, "-dataset", f.pattern + ", ", "-json"},
		[]string{addr, "-json", "-prefetch", "3"},
		[]string{addr, "-json", "-prefetch", "-1"},
	)()
	for i, r := range results {
		if r.code != 0 {
			t.Errorf("trainer %d: exit %d, stderr %q", i, r.code, r.stderr)
		}
	}
	f.checkPasses(t, results, 2)
}

func TestTextOutput(t *testing.T) {
	f := newFixture(t, clienttest.Options{Passes: 2})
	r := runTrainer(context.Background(), "-addr", f.m.Addr(), "-dataset", f.pattern)
	want := regexp.MustCompile(`^pass 0: 90 records, 1980 bytes, digest ([0-9a-f]{16})\npass 1: 90 records, 1980 bytes, digest ([0-9a-f]{16})\n$`)
	m := want.FindStringSubmatch(r.stdout)
	if r.code != 0 || m == nil || m[1] != f.want.String() || m[2] != f.want.String() {
		t.Fatalf("exit %d, stdout %q (dataset digest %s), stderr %q", r.code, r.stdout, f.want, r.stderr)
	}
}

// -fail-task and -fail-after report a task failed once; the master queues it
// again and it is consumed after all.
func TestFailTask(t *testing.T) {
	for _, tc := range []struct {
		flag, value string
		wantIndex   int // -1: any
	}{
		{"-fail-task", "4", 4},
		{"-fail-after", "3", -1},
	} {
		t.Run(tc.flag, func(t *testing.T) {
			f := newFixture(t, clienttest.Options{RequeueFailed: true})
			r := runTrainer(context.Background(), "-addr", f.m.Addr(), "-dataset", f.pattern, "-json", tc.flag, tc.value)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			var failed []wire.Task
			for _, e := range f.m.Events() {
				if e.Method == "TaskFailed" {
					failed = append(failed, e.Arg)
				}
			}
			if len(failed) != 1 || (tc.wantIndex >= 0 && failed[0].Index != tc.wantIndex) ||
				!strings.Contains(failed[0].Error, tc.flag+" "+tc.value) {
				t.Fatalf("failure reports: %+v", failed)
			}
			if !strings.Contains(r.stderr, "task failed") {
				t.Errorf("stderr does not log the failure: %q", r.stderr)
			}
			f.checkPasses(t, []result{r}, 1)
		})
	}
}

// -stall-task hangs on a task until the trainer is interrupted; the master
// times it out and another trainer does it. What the stalled trainer
// consumed before still counts.
func TestStallTask(t *testing.T) {
	f := newFixture(t, clienttest.Options{Passes: 2, Timeout: 300 * time.Millisecond})
	addr := "-addr=" + f.m.Addr()
	stallCtx, interrupt := context.WithCancel(context.Background())
	defer interrupt()
	stalled := startTrainers(stallCtx, []string{addr, "-dataset", f.pattern, "-json", "-stall-task", "2"})
	// Let it get task 2 first, then start a healthy trainer.
	for deadline := time.Now().Add(5 * time.Second); !dispatched(f.m, 2); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("task 2 never dispatched")
		}
	}
	healthy := startTrainers(context.Background(), []string{addr, "-json"})()
	interrupt()
	results := append(stalled(), healthy...)
	if r := results[0]; r.code != 1 || !strings.Contains(r.stderr, "trainer: interrupted (context canceled)") {
		t.Errorf("stalled trainer: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := results[1]; r.code != 0 {
		t.Errorf("healthy trainer: exit %d, stderr %q", r.code, r.stderr)
	}
	if !strings.Contains(results[0].stdout, `"pass":0`) {
		t.Errorf("the stalled trainer printed nothing of what it consumed: %q", results[0].stdout)
	}
	f.checkPasses(t, results, 2)
}

// -name, or TRAINER_NAME, is the name every call of the trainer carries,
// the finishes and failures of its Records loop included.
func TestName(t *testing.T) {
	for _, tc := range []struct{ name, flag, env string }{
		{"flag", "gpu7-a", ""},
		{"environment", "", "gpu7-b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, clienttest.Options{RequeueFailed: true})
			args := []string{"-addr", f.m.Addr(), "-dataset", f.pattern, "-fail-task", "1"}
			want := tc.flag
			if tc.flag != "" {
				args = append(args, "-name", tc.flag)
			} else {
				t.Setenv("TRAINER_NAME", tc.env)
				want = tc.env
			}
			if r := runTrainer(context.Background(), args...); r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			methods := map[string]int{}
			for _, e := range f.m.Events() {
				if e.Method == "ReportDataset" {
					continue
				}
				methods[e.Method]++
				if e.Arg.Trainer != want {
					t.Errorf("%s sent the name %q, want %q", e.Method, e.Arg.Trainer, want)
				}
			}
			if methods["GetTask"] == 0 || methods["TaskFailed"] == 0 {
				t.Errorf("calls made: %v, want GetTask and TaskFailed", methods)
			}
		})
	}
}

func dispatched(m *clienttest.Master, task int) bool {
	for _, e := range m.Events() {
		if e.Method == "GetTask" && e.Err == "" && e.Reply.Index == task {
			return true
		}
	}
	return false
}

func TestErrors(t *testing.T) {
	f := newFixture(t, clienttest.Options{})
	for _, tc := range []struct {
		name    string
		args    []string
		timeout time.Duration
		code    int
		stderr  string
	}{
		{"no address", nil, 0, 2, "trainer: give either -addr or -endpoints"},
		{"unknown flag", []string{"-addr", "x:1", "-bogus"}, 0, 2, "flag provided but not defined: -bogus"},
		{"stray argument", []string{"-addr", "x:1", "data"}, 0, 2, `unexpected arguments ["data"]`},
		{"bad dataset", []string{"-addr", f.m.Addr(), "-dataset", "/nonexistent/*"}, 0, 1,
			`trainer: report dataset: Master.ReportDataset: pattern "/nonexistent/*" matches no file`},
		{"no master", []string{"-addr", "127.0.0.1:1"}, 200 * time.Millisecond, 1,
			"trainer: interrupted (context deadline exceeded)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			if tc.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.timeout)
				defer cancel()
			}
			r := runTrainer(ctx, tc.args...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.stderr) {
				t.Errorf("exit %d, stderr %q; want %d and %q", r.code, r.stderr, tc.code, tc.stderr)
			}
		})
	}
}

// checkGoroutines fails the test if, once its other cleanups have run, more
// goroutines run than when it was called (waiting a little for them to end).
func checkGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		for deadline := time.Now().Add(3 * time.Second); runtime.NumGoroutine() > before; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Errorf("%d goroutines running, %d before the test", runtime.NumGoroutine(), before)
				return
			}
		}
	})
}
