package main

import (
	"bytes"
	"encoding/gob"
	"fmt"
	"net"
	"net/rpc"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/etcdembed/etcdtest"
)

// startOnEtcd starts a master on a test etcd of its own (so that the
// master process holds few file descriptors) and returns it serving. Its
// lock's TTL is 10 s: these tests flood it on a loaded machine, and a
// session that expires would move it to another port mid-test.
func startOnEtcd(t *testing.T, args ...string) (*proc, string) {
	t.Helper()
	srv, _ := etcdtest.Start(t)
	p := startMaster(t, append([]string{"-endpoints", strings.Join(srv.Endpoints(), ","), "-ttl", "10"}, args...)...)
	return p, p.awaitServing(30 * time.Second)
}

// setFileLimit lowers the soft and hard limit of open files of process pid
// (prlimit(2), as `ulimit -n` does for a shell).
func setFileLimit(t *testing.T, pid, limit int) {
	t.Helper()
	lim := syscall.Rlimit{Cur: uint64(limit), Max: uint64(limit)}
	_, _, errno := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), syscall.RLIMIT_NOFILE, uintptr(unsafe.Pointer(&lim)), 0, 0, 0)
	if errno != 0 {
		t.Fatalf("prlimit: %v", errno)
	}
}

func openFiles(t *testing.T, pid int) int {
	t.Helper()
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

// TestNetOutOfFileDescriptors: a master that runs out of file descriptors
// because of idle connections says so, keeps its lock and, once the
// connections are gone, accepts again: it is not left holding the lock and
// its address while taking no connection, as when the first accept error
// ended its accept loop.
func TestNetOutOfFileDescriptors(t *testing.T) {
	p, addr := startOnEtcd(t)
	pid := p.cmd.Process.Pid
	limit := openFiles(t, pid) + 50
	setFileLimit(t, pid, limit)
	var idle []net.Conn
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	for range limit + 50 { // the kernel completes connections the master cannot accept
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			break // the listen backlog is full
		}
		idle = append(idle, c)
	}
	p.awaitLog("cannot accept trainer connections", 10*time.Second)
	for _, c := range idle {
		c.Close()
	}
	idle = nil
	deadline := time.Now().Add(15 * time.Second)
	for {
		err := callWithin(addr, "Master.Status", 0, new(wire.Status), 2*time.Second)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the master does not serve after its file descriptors came back: %v", err)
		}
	}
	p.awaitLog("accepting trainer connections again", 5*time.Second)
	// One warning per run of errors, not one per error: a descriptor freed
	// meanwhile (the etcd client's, say) can end a run and start another.
	if n := strings.Count(p.logText(), "cannot accept trainer connections"); n < 1 || n > 3 {
		t.Errorf("%d warnings for the accept errors, want 1 to 3 (one per run of errors)", n)
	}
	if strings.Contains(p.logText(), "resigned") {
		t.Error("the master resigned over accept errors that pass")
	}
}

// callWithin calls method on a new connection to addr, giving up after
// limit.
func callWithin(addr, method string, args, reply any, limit time.Duration) error {
	conn, err := net.DialTimeout("tcp", addr, limit)
	if err != nil {
		return err
	}
	c := rpc.NewClient(conn)
	defer c.Close()
	call := c.Go(method, args, reply, nil)
	select {
	case <-call.Done:
		return call.Error
	case <-time.After(limit):
		return fmt.Errorf("no reply in %v", limit)
	}
}

// peakRSS is the high-water mark of the resident memory of process pid.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc/PID/status")
	return 0
}

// TestNetMemoryBoundedPerConnection: what a client sends cannot make the
// master's memory grow without bound: neither calls pipelined without
// reading the replies (net/rpc used to start a goroutine for each) nor a
// request of 64 MiB (it used to be read whole, then decoded).
func TestNetMemoryBoundedPerConnection(t *testing.T) {
	p, addr := startOnEtcd(t)
	pid := p.cmd.Process.Pid
	for _, tc := range []struct {
		name  string
		flood func(t *testing.T) error // the answer, if any
	}{
		{"pipelined calls", func(t *testing.T) error { pipeline(t, addr, 400_000); return nil }},
		{"a 64 MiB request", func(t *testing.T) error {
			c, err := rpc.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			var dummy int
			err = c.Call("Master.ReportDataset", []string{strings.Repeat("x", 64<<20)}, &dummy)
			if err == nil || !strings.Contains(err.Error(), "-max-request-bytes") {
				return fmt.Errorf("a 64 MiB ReportDataset answered %.200v", err)
			}
			return nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := peakRSS(t, pid)
			answer := tc.flood(t)
			grown := peakRSS(t, pid) - before
			t.Logf("peak RSS %d MiB before, grown by %d MiB", before>>20, grown>>20)
			if grown > 48<<20 {
				t.Fatalf("the master's peak RSS grew by %d MiB", grown>>20)
			}
			if answer != nil {
				t.Fatal(answer)
			}
			if err := callWithin(addr, "Master.Status", 0, new(wire.Status), 5*time.Second); err != nil {
				t.Fatalf("the master does not serve after: %v", err)
			}
		})
	}
}

// pipeline sends n Status calls on one connection without reading the
// replies, until the master stops reading (or all are sent), then hangs up.
func pipeline(t *testing.T, addr string, n int) {
	t.Helper()
	var flood bytes.Buffer
	enc := gob.NewEncoder(&flood)
	for seq := range n {
		enc.Encode(rpc.Request{ServiceMethod: "Master.Status", Seq: uint64(seq)})
		enc.Encode(0)
	}
	// A small receive buffer: the replies back up in the master at once.
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	conn.Write(flood.Bytes()) // a timeout means the master stopped reading: enough
}
