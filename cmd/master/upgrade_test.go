package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/trainmaster/master/internal/etcdembed/etcdtest"
)

// upgradeFrom is the commit of main the upgrade test builds the old master
// from: the last one before named datasets, whose keys lie right under
// /task_queues/ (doc/etcd.md).
const upgradeFrom = "2ab3bd01f81ebf91e1975ba204a07593232538b2"

// buildAt builds the master of commit rev, from the repository's history,
// and returns its path.
func buildAt(t *testing.T, rev string) string {
	t.Helper()
	root, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatalf("the upgrade test builds a master of an earlier commit and needs the repository's git history: %v", err)
	}
	if out, err := exec.Command("git", "-C", strings.TrimSpace(string(root)), "cat-file", "-e", rev+"^{commit}").CombinedOutput(); err != nil {
		t.Fatalf("commit %s, the master to upgrade from, is not in this clone (a shallow clone?): %v %s", rev, err, out)
	}
	src := t.TempDir()
	archive := exec.Command("git", "-C", strings.TrimSpace(string(root)), "archive", rev)
	extract := exec.Command("tar", "-x", "-C", src)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	extract.Stdin = pipe
	if err := extract.Start(); err != nil {
		t.Fatal(err)
	}
	if err := archive.Run(); err != nil {
		t.Fatalf("git archive %s: %v", rev, err)
	}
	if err := extract.Wait(); err != nil {
		t.Fatalf("tar: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "master-old")
	build := exec.Command("go", "build", "-o", bin, "./cmd/master")
	build.Dir = src
	build.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the master of %s: %v\n%s", rev, err, out)
	}
	return bin
}

// TestUpgradeTakesOverFromAnOldMaster: a master built from an earlier
// commit of main leads a job with trainers; this build starts as its
// standby and the old one is killed mid-pass. The new master reads the
// old layout (train right under /task_queues/), takes over, and every task
// of every pass is consumed.
func TestUpgradeTakesOverFromAnOldMaster(t *testing.T) {
	old := buildAt(t, upgradeFrom)
	const passes, trainers = 2, 3
	srv, cli := etcdtest.Start(t)
	endpoints := strings.Join(srv.Endpoints(), ",")
	pattern := writeDataset(t, 4) // 200 chunks: 100 tasks of 2
	args := []string{"-endpoints", endpoints, "-passes", "2", "-chunks-per-task", "2", "-task-timeout-min", "1s", "-dataset", pattern}
	a := startMasterOf(t, old, args...)
	addrA := a.awaitServing(20 * time.Second)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	log := &dispatchLog{consumed: map[[2]int]int{}}
	errs := runTrainers(ctx, t, trainers, srv.Endpoints(), pattern, log, 3*time.Millisecond)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if st := status(t, addrA); st.Pass == 0 && st.Done >= 30 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pass 0 did not get going: %+v", status(t, addrA))
		}
	}
	b := startMaster(t, args...)
	b.awaitLog("standing by", 20*time.Second)
	if resp, err := cli.Get(ctx, "/task_queues/meta"); err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("the old master's meta at /task_queues/meta: %v, %v", resp, err)
	}
	a.signal(syscall.SIGKILL)
	b.awaitServing(10 * time.Second)
	b.awaitLog(`msg="state restored" dataset=train`, 10*time.Second)
	for range trainers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for p := range passes {
		for task := range 100 {
			if log.consumed[[2]int{p, task}] == 0 {
				t.Errorf("pass %d: task %d never consumed", p, task)
			}
		}
	}
	if resp, err := cli.Get(ctx, "/task_queues/train/", clientv3.WithPrefix()); err != nil || len(resp.Kvs) != 0 {
		t.Errorf("the new master wrote under /task_queues/train/ (%d keys, %v): it must keep the old layout", len(resp.Kvs), err)
	}
}
