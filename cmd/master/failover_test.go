package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/trainmaster/master/go/client"
	"github.com/trainmaster/master/go/discovery"
	"github.com/trainmaster/master/go/recordio"
	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/etcdembed/etcdtest"
)

// dispatchLog records every task the trainers received, with when.
type dispatchLog struct {
	mu       sync.Mutex
	received []received
	consumed map[[2]int]int // {pass, task} -> times consumed to the end
}

type received struct {
	pass, task, epoch int
	at                time.Time
}

func (d *dispatchLog) inject(t wire.Task) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.received = append(d.received, received{t.Pass, t.Index, t.Epoch, time.Now()})
	return nil
}

func (d *dispatchLog) consume(pass, task int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.consumed[[2]int{pass, task}]++
}

// runTrainers runs n in-process trainers that find the master through etcd.
func runTrainers(ctx context.Context, t *testing.T, n int, endpoints []string, pattern string, log *dispatchLog, delay time.Duration) chan error {
	errs := make(chan error, n)
	for i := range n {
		go func() {
			cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second})
			if err != nil {
				errs <- err
				return
			}
			defer cli.Close()
			c := client.New(discovery.NewResolver(cli, ""), client.Config{
				Inject: log.inject, MinBackoff: 20 * time.Millisecond, MaxBackoff: 300 * time.Millisecond, CallTimeout: 5 * time.Second})
			defer c.Close()
			if err := c.ReportDataset(ctx, []string{pattern}); err != nil {
				errs <- fmt.Errorf("trainer %d: %w", i, err)
				return
			}
			for rec, err := range c.Records(ctx) {
				if err != nil {
					errs <- fmt.Errorf("trainer %d: %w", i, err)
					return
				}
				time.Sleep(delay)
				if rec.Last {
					log.consume(rec.Pass, rec.Task)
				}
			}
			errs <- nil
		}()
	}
	return errs
}

// doneInEtcd reads the pass and its Done tasks from the persisted state.
func doneInEtcd(t *testing.T, cli *clientv3.Client) (int, map[int]bool) {
	t.Helper()
	resp, err := cli.Get(context.Background(), "/task_queues/train/pass")
	if err != nil || len(resp.Kvs) == 0 {
		t.Fatalf("read pass: %v", err)
	}
	var p struct{ Pass int }
	json.Unmarshal(resp.Kvs[0].Value, &p)
	tasks, err := cli.Get(context.Background(), "/task_queues/train/tasks/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	done := map[int]bool{}
	for _, kv := range tasks.Kvs {
		var e struct {
			Pass  int
			Queue string
		}
		json.Unmarshal(kv.Value, &e)
		if e.Pass == p.Pass && e.Queue == "done" {
			var i int
			fmt.Sscanf(strings.TrimPrefix(string(kv.Key), "/task_queues/train/tasks/"), "%d", &i)
			done[i] = true
		}
	}
	return p.Pass, done
}

// TestLeaderKilledMidPass: two masters on one etcd; the leader is killed
// with SIGKILL in the middle of a pass. The standby must serve within TTL +
// 1 s, the trainers must finish every pass with every task consumed, and no
// task Done before the kill may be dispatched again in that pass.
func TestLeaderKilledMidPass(t *testing.T) {
	const ttl, passes, trainers = 2, 2, 4
	srv, cli := etcdtest.Start(t)
	endpoints := strings.Join(srv.Endpoints(), ",")
	pattern := writeDataset(t, 4) // 200 chunks
	args := []string{"-endpoints", endpoints, "-passes", fmt.Sprint(passes), "-chunks-per-task", "2", "-task-timeout-min", "1s"}
	a := startMaster(t, args...)
	addrA := a.awaitServing(20 * time.Second)
	b := startMaster(t, args...)
	b.awaitLog("standing by", 20*time.Second)

	log := &dispatchLog{consumed: map[[2]int]int{}}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	errs := runTrainers(ctx, t, trainers, srv.Endpoints(), pattern, log, time.Millisecond)

	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if st := status(t, addrA); st.Pass == 0 && st.Done >= 30 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pass 0 did not get going: %+v", status(t, addrA))
		}
	}
	a.signal(syscall.SIGKILL)
	killed := time.Now()
	pass, doneAtKill := doneInEtcd(t, cli)
	b.awaitServing(10 * time.Second)
	failover := time.Since(killed)
	t.Logf("failover after SIGKILL: %v (TTL %ds); %d tasks done in pass %d at the kill", failover.Round(time.Millisecond), ttl, len(doneAtKill), pass)
	if failover > (ttl+1)*time.Second {
		t.Errorf("standby served %v after the kill, want within TTL + 1 s", failover)
	}

	for range trainers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	for _, r := range log.received {
		if r.at.After(killed) && r.pass == pass && doneAtKill[r.task] {
			t.Errorf("task %d, Done in pass %d before the kill, dispatched again (epoch %d)", r.task, pass, r.epoch)
		}
	}
	for p := range passes {
		for task := range 100 {
			if log.consumed[[2]int{p, task}] == 0 {
				t.Errorf("pass %d: task %d never consumed", p, task)
			}
		}
	}
}

// TestDeposedLeaderIsFenced: the leader is stopped (SIGSTOP) until a standby
// has taken over, then resumed. A call it was holding makes it write; that
// write is rejected, it stops serving, and the successor's state in etcd is
// unchanged.
func TestDeposedLeaderIsFenced(t *testing.T) {
	srv, cli := etcdtest.Start(t)
	pattern := writeDataset(t, 1)
	args := []string{"-endpoints", strings.Join(srv.Endpoints(), ","), "-chunks-per-task", "5"}
	a := startMaster(t, args...)
	addrA := a.awaitServing(20 * time.Second)
	var dummy int
	if err := call(t, addrA, "Master.ReportDataset", []string{pattern}, &dummy); err != nil {
		t.Fatal(err)
	}
	var task wire.Task
	if err := call(t, addrA, "Master.GetTask", wire.Task{}, &task); err != nil {
		t.Fatal(err)
	}
	b := startMaster(t, args...)
	b.awaitLog("standing by", 20*time.Second)

	a.signal(syscall.SIGSTOP)
	a.awaitState('T') // stopped for sure before the call below is sent
	// A call to the stopped leader: the kernel takes the connection, the
	// process answers only once resumed.
	held := make(chan error, 1)
	go func() {
		var next wire.Task
		held <- call(t, addrA, "Master.GetTask", wire.Task{}, &next)
	}()
	addrB := b.awaitServing(20 * time.Second)
	if st := status(t, addrB); st.Pending != 1 || st.Tasks != 10 {
		t.Fatalf("successor's state %+v, want the pending task of its predecessor", st)
	}
	before, err := cli.Get(context.Background(), "/task_queues/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}

	a.signal(syscall.SIGCONT)
	select {
	case err := <-held:
		// Either its write was rejected ("master is not serving"), or it saw
		// its session had expired first and closed the connection: never a task.
		if err == nil || !(wire.Is(err, wire.TextNotServing) || strings.Contains(err.Error(), "shut down") ||
			strings.Contains(err.Error(), "EOF") || strings.Contains(err.Error(), "reset by peer")) {
			t.Fatalf("the deposed leader answered the held call with %v", err)
		}
		t.Logf("held call answered: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("the deposed leader never answered the held call")
	}
	a.awaitLog("standing by", 10*time.Second) // it dropped its term and campaigns again
	if err := call(t, addrA, "Master.Status", 0, new(wire.Status)); err == nil {
		t.Fatal("the deposed leader still serves")
	}
	after, err := cli.Get(context.Background(), "/task_queues/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if len(after.Kvs) != len(before.Kvs) {
		t.Fatalf("keys under /task_queues: %d before resuming the old leader, %d after", len(before.Kvs), len(after.Kvs))
	}
	for i := range before.Kvs {
		if after.Kvs[i].ModRevision != before.Kvs[i].ModRevision {
			t.Fatalf("%s was written after the old leader resumed", after.Kvs[i].Key)
		}
	}
	if rejected := strings.Contains(a.logText(), "fenced write rejected"); rejected {
		t.Log("the old leader's write was rejected by the fence")
	} else {
		t.Log("the old leader noticed its expired session before writing")
	}
}

// TestRestartWithEmbeddedEtcd: a lone master on its embedded etcd is killed
// with SIGKILL (etcd dies with it) and started again on the same data
// directory: same pass, same Done set, and it goes on from there.
func TestRestartWithEmbeddedEtcd(t *testing.T) {
	dataDir := t.TempDir()
	pattern := writeDataset(t, 1) // 50 chunks
	args := []string{"-data-dir", dataDir, "-chunks-per-task", "1", "-passes", "2"}
	first := startMaster(t, args...)
	addr := first.awaitServing(30 * time.Second)
	var dummy int
	if err := call(t, addr, "Master.ReportDataset", []string{pattern}, &dummy); err != nil {
		t.Fatal(err)
	}
	// Finish pass 0 and ten tasks of pass 1.
	var prev wire.Task
	for range 60 {
		var next wire.Task
		if err := call(t, addr, "Master.GetTask", prev, &next); err != nil {
			t.Fatal(err)
		}
		prev = next
	}
	cli := etcdtest.NewClient(t, []string{strings.TrimSpace(readFile(t, dataDir+"/endpoint"))})
	passBefore, doneBefore := doneInEtcd(t, cli)
	cli.Close()
	first.signal(syscall.SIGKILL)
	<-first.exited

	second := startMaster(t, args...)
	addr = second.awaitServing(30 * time.Second)
	cli = etcdtest.NewClient(t, []string{strings.TrimSpace(readFile(t, dataDir+"/endpoint"))})
	passAfter, doneAfter := doneInEtcd(t, cli)
	if passBefore != 1 || passAfter != 1 || len(doneAfter) != 9 || fmt.Sprint(doneAfter) != fmt.Sprint(doneBefore) {
		t.Fatalf("before the kill: pass %d done %v; after the restart: pass %d done %v", passBefore, doneBefore, passAfter, doneAfter)
	}
	st := status(t, addr)
	if st.Pass != 1 || st.Done != 9 || st.Pending != 1 {
		t.Fatalf("restarted master: %+v, want pass 1 with 9 done and the 1 pending", st)
	}
	for {
		var next wire.Task
		err := call(t, addr, "Master.GetTask", wire.Task{}, &next)
		if wire.Is(err, wire.TextNoTask) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if doneBefore[next.Index] {
			t.Fatalf("task %d, done before the kill, dispatched again in pass 1", next.Index)
		}
	}
	var ins inspection
	out, err := exec.Command(binPath, "inspect", "-data-dir", dataDir, "-json").Output()
	if err != nil || json.Unmarshal(out, &ins) != nil {
		t.Fatalf("inspect: %v\n%s", err, out)
	}
	if ins.Pass != 1 || ins.Counts["done"] != 9 || ins.Counts["pending"] != 41 || ins.MasterAddr != addr || ins.Dataset.Tasks != 50 {
		t.Fatalf("inspect says %+v", ins)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRefusesStateOfANewerFormat: a master finding a state it cannot read
// exits with a clear message and leaves the state as it is.
func TestRefusesStateOfANewerFormat(t *testing.T) {
	srv, cli := etcdtest.Start(t)
	const meta = `{"format":99,"patterns":["x"],"chunks_per_task":10,"files":1,"chunks":1,"tasks":1}`
	put, err := cli.Put(context.Background(), "/task_queues/meta", meta)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(binPath, "-endpoints", strings.Join(srv.Endpoints(), ","), "-addr", "127.0.0.1:0").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "holds format 99; this master reads format 1 only") {
		t.Fatalf("exit %v, output:\n%s", err, out)
	}
	resp, err := cli.Get(context.Background(), "/task_queues/meta")
	if err != nil || string(resp.Kvs[0].Value) != meta || resp.Kvs[0].ModRevision != put.Header.Revision {
		t.Fatalf("the state was touched: %v %v", resp.Kvs, err)
	}
}

// TestUnreadableFilesAreDiscarded: one file has a damaged chunk when the
// dataset is accepted, another is deleted afterwards. Trainers report the
// tasks failed with the reason, the master discards them after the limit,
// every pass still completes, and inspect shows what was discarded.
func TestUnreadableFilesAreDiscarded(t *testing.T) {
	dataDir := t.TempDir()
	pattern := writeDataset(t, 3) // 50 chunks each
	files, _ := filepath.Glob(pattern)
	damageChunk(t, files[0], 7)
	p := startMaster(t, "-data-dir", dataDir, "-chunks-per-task", "10", "-passes", "2", "-task-timeout-max", "1")
	addr := p.awaitServing(30 * time.Second)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := client.New(client.Static(addr), client.Config{MinBackoff: 10 * time.Millisecond, MaxBackoff: 100 * time.Millisecond})
	defer c.Close()
	if err := c.ReportDataset(ctx, []string{pattern}); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(files[2]); err != nil {
		t.Fatal(err)
	}
	consumed := map[[2]int]bool{}
	for rec, err := range c.Records(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if rec.Last {
			consumed[[2]int{rec.Pass, rec.Task}] = true
		}
	}
	// Task 0 holds the damaged chunk; tasks 10 to 14 are the deleted file.
	bad := map[int]bool{0: true, 10: true, 11: true, 12: true, 13: true, 14: true}
	for pass := range 2 {
		for task := range 15 {
			if consumed[[2]int{pass, task}] == bad[task] {
				t.Errorf("pass %d task %d: consumed %v", pass, task, consumed[[2]int{pass, task}])
			}
		}
	}
	// The master logs before it replies, but the lines reach this process
	// through a pipe read by another goroutine: wait for them.
	for _, want := range []string{"checksum mismatch", files[0], "no such file", files[2], "discarded for this pass", "all passes done"} {
		p.awaitLog(want, 10*time.Second)
	}
	var ins inspection
	out, err := exec.Command(binPath, "inspect", "-data-dir", dataDir, "-json").Output()
	if err != nil || json.Unmarshal(out, &ins) != nil {
		t.Fatalf("inspect: %v\n%s", err, out)
	}
	if len(ins.FailedLastPass) != 6 || !strings.Contains(ins.FailedLastPass[1].Error, files[2]) {
		t.Fatalf("inspect shows %d tasks discarded in the last pass: %+v", len(ins.FailedLastPass), ins.FailedLastPass)
	}
}

// damageChunk flips a payload byte of one chunk: the file still indexes,
// reading that chunk fails its checksum.
func damageChunk(t *testing.T, path string, chunk int) {
	t.Helper()
	ix, err := recordio.IndexFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[ix.Chunks[chunk].Offset+25] ^= 0xff
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
