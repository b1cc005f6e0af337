package main

import (
	"encoding/json"
	"fmt"
	"math"
	"net/rpc"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/etcdembed/etcdtest"
)

// taker is one trainer taking a job's tasks one at a time, each call
// reporting the task taken before it finished: what it records is exactly
// the order the master hands tasks out in.
type taker struct {
	t    *testing.T
	c    *rpc.Client
	held wire.Task
	got  [][]wire.Task // per pass, as handed out
}

// dial connects the taker to the master at addr (again after a failover).
func (k *taker) dial(addr string) {
	k.t.Helper()
	if k.c != nil {
		k.c.Close()
	}
	c, err := rpc.Dial("tcp", addr)
	if err != nil {
		k.t.Fatal(err)
	}
	k.c = c
	k.t.Cleanup(func() { c.Close() })
}

// take takes up to n tasks; it returns false once every pass is done.
func (k *taker) take(n int) bool {
	k.t.Helper()
	for range n {
		var next wire.Task
		err := k.c.Call("Master.GetTask", k.held, &next)
		if wire.Is(err, wire.TextAllDone) {
			return false
		}
		if err != nil {
			k.t.Fatal(err)
		}
		for len(k.got) <= next.Pass {
			k.got = append(k.got, nil)
		}
		k.got[next.Pass] = append(k.got[next.Pass], next)
		k.held = next
	}
	return true
}

// orders returns the tasks of each pass in the order they were handed
// out, checking that each task carries the seed of its records.
func (k *taker) orders(seed uint64) [][]int {
	k.t.Helper()
	out := make([][]int, len(k.got))
	for p, tasks := range k.got {
		for _, task := range tasks {
			want := uint64(0)
			if seed != 0 {
				want = wire.TaskSeed(seed, p, task.Index)
			}
			if task.Pass != p || task.Epoch != 1 || task.Seed != want {
				k.t.Errorf("pass %d: task %d epoch %d has seed %d, want epoch 1 and seed %d", p, task.Index, task.Epoch, task.Seed, want)
			}
			out[p] = append(out[p], task.Index)
		}
	}
	return out
}

// TestShuffleSeed: jobs of 50 tasks and 2 passes, each a namespace of one
// etcd, their tasks taken one at a time. Two jobs with -shuffle-seed 7,
// the leader of one of them killed (SIGKILL) in the middle of its first
// pass and a standby taking over, hand out the same tasks in the same
// order in each pass, another per pass; -shuffle-seed 8 gives other
// orders; no seed gives task order, which is the files' order.
func TestShuffleSeed(t *testing.T) {
	const tasks, passes = 50, 2
	srv, _ := etcdtest.Start(t)
	endpoints := strings.Join(srv.Endpoints(), ",")
	pattern := writeDataset(t, 1) // 50 chunks: a task each
	args := func(job string, seed uint64) []string {
		return []string{"-endpoints", endpoints, "-namespace", "/" + job, "-passes", fmt.Sprint(passes),
			"-chunks-per-task", "1", "-shuffle-seed", fmt.Sprint(seed)}
	}
	// run takes every task of a job, from a master started with seed.
	run := func(job string, seed uint64) [][]int {
		k := &taker{t: t}
		k.dial(startMaster(t, args(job, seed)...).awaitServing(20 * time.Second))
		if err := k.c.Call("Master.ReportDataset", []string{pattern}, new(int)); err != nil {
			t.Fatal(err)
		}
		k.take(math.MaxInt)
		return k.orders(seed)
	}

	seven, eight, none := run("seven", 7), run("eight", 8), run("none", 0)

	// The same seed, with a failover 20 tasks into the first pass.
	leader := startMaster(t, args("failover", 7)...)
	k := &taker{t: t}
	k.dial(leader.awaitServing(20 * time.Second))
	standby := startMaster(t, args("failover", 7)...)
	standby.awaitLog("standing by", 20*time.Second)
	if err := k.c.Call("Master.ReportDataset", []string{pattern}, new(int)); err != nil {
		t.Fatal(err)
	}
	k.take(20) // the 20th is held, pending, when the leader dies
	leader.signal(syscall.SIGKILL)
	k.dial(standby.awaitServing(20 * time.Second))
	k.take(math.MaxInt)
	failover := k.orders(7)

	identity := make([]int, tasks)
	for i := range identity {
		identity[i] = i
	}
	for _, job := range []struct {
		name   string
		orders [][]int
	}{{"seed 7", seven}, {"seed 8", eight}, {"no seed", none}, {"seed 7 with a failover", failover}} {
		if len(job.orders) != passes {
			t.Fatalf("%s: %d passes handed out, want %d", job.name, len(job.orders), passes)
		}
		for p, order := range job.orders {
			if !slices.Equal(slices.Sorted(slices.Values(order)), identity) {
				t.Errorf("%s: pass %d handed out %v, not every task once", job.name, p, order)
			}
		}
	}
	for p := range passes {
		if !slices.Equal(failover[p], seven[p]) {
			t.Errorf("pass %d with seed 7: %v, and with a failover: %v", p, seven[p], failover[p])
		}
		if slices.Equal(seven[p], eight[p]) || slices.Equal(seven[p], identity) || slices.Equal(eight[p], identity) {
			t.Errorf("pass %d: seed 7 %v, seed 8 %v: want two orders, neither the files'", p, seven[p], eight[p])
		}
		if !slices.Equal(none[p], identity) {
			t.Errorf("pass %d without a seed: %v, want the files' order", p, none[p])
		}
	}
	if slices.Equal(seven[0], seven[1]) {
		t.Errorf("seed 7 hands out both passes in the order %v", seven[0])
	}
	// The seed is stored with the dataset, where inspect shows it.
	for job, want := range map[string]uint64{"failover": 7, "none": 0} {
		var ins inspection
		out, err := exec.Command(binPath, "inspect", "-endpoints", endpoints, "-namespace", "/"+job, "-json").Output()
		if err != nil || json.Unmarshal(out, &ins) != nil || ins.Dataset == nil {
			t.Fatalf("inspect: %v\n%s", err, out)
		}
		if ins.Dataset.ShuffleSeed != want {
			t.Errorf("job %s: inspect shows shuffle seed %d, want %d", job, ins.Dataset.ShuffleSeed, want)
		}
	}
}
