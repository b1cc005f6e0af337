package leader

import (
	"context"
	"io"
	"net/rpc"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/trainmaster/master/go/discovery"
	"github.com/trainmaster/master/go/recordio"
	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/etcdembed/etcdtest"
)

// run starts Run in the background and returns the channel of the
// addresses it serves on and a stop function that waits for Run to end.
func run(t *testing.T, cli *clientv3.Client) (<-chan string, func()) {
	t.Helper()
	log := logrus.New()
	log.SetOutput(io.Discard)
	serving := make(chan string, 4)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Config{Client: cli, TTL: 2, Addr: "127.0.0.1:0", Log: log, Serving: func(a string) { serving <- a }})
	}()
	stop := sync.OnceFunc(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	t.Cleanup(stop)
	return serving, stop
}

func await(t *testing.T, c <-chan string, limit time.Duration) string {
	t.Helper()
	select {
	case a := <-c:
		return a
	case <-time.After(limit):
		t.Fatalf("not serving after %v", limit)
	}
	return ""
}

func TestResignHandsOverAtOnce(t *testing.T) {
	_, cli := etcdtest.Start(t)
	firstServing, stopFirst := run(t, cli)
	first := await(t, firstServing, 10*time.Second)
	secondServing, _ := run(t, cli)
	select {
	case <-secondServing:
		t.Fatal("the standby serves while the leader leads")
	case <-time.After(300 * time.Millisecond):
	}
	start := time.Now()
	stopFirst()
	second := await(t, secondServing, 2*time.Second)
	t.Logf("handover after resign: %v", time.Since(start))
	if second == first {
		t.Fatalf("both served on %s", first)
	}
	resp, err := cli.Get(context.Background(), discovery.AddrKey(""))
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != second {
		t.Fatalf("published address %v %v, want %s", resp.Kvs, err, second)
	}
}

// TestStepsDownWhenItsLockGoes: the leader's lock key is deleted behind its
// back; its next write is rejected, the caller is told "master is not
// serving", and it stops serving and campaigns again.
func TestStepsDownWhenItsLockGoes(t *testing.T) {
	_, cli := etcdtest.Start(t)
	path := filepath.Join(t.TempDir(), "data.recordio")
	if err := recordio.WriteFile(path, 1, func(int) []byte { return []byte("one record") }); err != nil {
		t.Fatal(err)
	}

	serving, _ := run(t, cli)
	addr := await(t, serving, 10*time.Second)
	if _, err := cli.Delete(context.Background(), discovery.LockPrefix(""), clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	c, err := rpc.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var dummy int
	err = c.Call("Master.ReportDataset", []string{path}, &dummy) // saving the dataset is a write
	if !wire.Is(err, wire.TextNotServing) {
		t.Fatalf("a deposed leader answered %v", err)
	}
	again := await(t, serving, 15*time.Second) // alone, it wins the next election
	if again == addr {
		t.Fatalf("serving again on the same address %s: the old listener was not closed", addr)
	}
	if _, err := rpc.Dial("tcp", addr); err == nil {
		t.Fatal("the old listener still accepts connections")
	}
}
