package main

import (
	"bufio"
	"bytes"
	"fmt"
	"net/rpc"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/trainmaster/master/go/recordio"
	"github.com/trainmaster/master/go/wire"
)

// binPath is the master binary built once for the package's tests.
var binPath string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "master-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binPath = filepath.Join(dir, "master")
	if out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// proc is a master process whose log the test follows.
type proc struct {
	t       *testing.T
	cmd     *exec.Cmd
	mu      sync.Mutex
	log     strings.Builder
	serving chan string // the published address, each time it starts serving
	door    chan string // the status page's URL, once its port is open (-http-addr)
	exited  chan struct{}
}

var (
	servingRE = regexp.MustCompile(`msg="leading: serving trainers" addr="?([^" ]+)`)
	doorRE    = regexp.MustCompile(`msg="status page, [^"]*" .*url="?([^" ]+)`)
)

func startMaster(t *testing.T, args ...string) *proc {
	t.Helper()
	return startMasterOf(t, binPath, args...)
}

// startMasterOf starts the master binary at bin.
func startMasterOf(t *testing.T, bin string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"-addr", "127.0.0.1:0", "-ttl", "2", "-log-level", "debug"}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{t: t, cmd: cmd, serving: make(chan string, 4), door: make(chan string, 1), exited: make(chan struct{})}
	go func() {
		defer close(p.exited)
		lines := bufio.NewScanner(stderr)
		for lines.Scan() {
			p.mu.Lock()
			p.log.WriteString(lines.Text() + "\n")
			p.mu.Unlock()
			if m := servingRE.FindStringSubmatch(lines.Text()); m != nil {
				p.serving <- m[1]
			}
			if m := doorRE.FindStringSubmatch(lines.Text()); m != nil {
				p.door <- m[1]
			}
		}
		cmd.Wait()
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-p.exited
		if t.Failed() {
			t.Logf("log of master %d:\n%s", cmd.Process.Pid, lastLines(p.logText(), 40))
		}
	})
	return p
}

// lastLines keeps the end of a failed test's log short, so that the
// failure itself stays in view above it when CI shows only the tail.
func lastLines(text string, n int) string {
	lines := strings.SplitAfter(text, "\n")
	if len(lines) <= n {
		return text
	}
	return fmt.Sprintf("(%d lines before these)\n", len(lines)-n) + strings.Join(lines[len(lines)-n:], "")
}

func (p *proc) logText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

func (p *proc) signal(sig syscall.Signal) {
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatal(err)
	}
}

// awaitState waits until the kernel reports the process in state (from
// /proc/PID/stat: 'T' is stopped): a signal is delivered asynchronously.
func (p *proc) awaitState(state byte) {
	p.t.Helper()
	path := fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		b, err := os.ReadFile(path)
		// The state follows the command name, which is in parentheses.
		if i := bytes.LastIndexByte(b, ')'); err == nil && i >= 0 && i+2 < len(b) && b[i+2] == state {
			return
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("process %d not in state %c after 5 s", p.cmd.Process.Pid, state)
		}
	}
}

// awaitServing waits for the process to publish its address.
func (p *proc) awaitServing(limit time.Duration) string {
	p.t.Helper()
	return p.await(p.serving, "serving", limit)
}

// awaitDoor waits for the process to open its status page, and returns
// the page's URL.
func (p *proc) awaitDoor(limit time.Duration) string {
	p.t.Helper()
	return p.await(p.door, "opening its status page", limit)
}

// await returns the next value its log sends on c, within limit.
func (p *proc) await(c <-chan string, what string, limit time.Duration) string {
	p.t.Helper()
	select {
	case v := <-c:
		return v
	case <-p.exited:
		p.t.Fatalf("master exited before %s", what)
	case <-time.After(limit):
		p.t.Fatalf("master not %s after %v", what, limit)
	}
	return ""
}

// awaitLog waits for a log line containing text.
func (p *proc) awaitLog(text string, limit time.Duration) {
	p.t.Helper()
	for deadline := time.Now().Add(limit); !strings.Contains(p.logText(), text); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			p.t.Fatalf("no %q in the log after %v", text, limit)
		}
	}
}

// writeDataset writes files of 50 chunks of 20 records each.
func writeDataset(t testing.TB, files int) string {
	t.Helper()
	dir := t.TempDir()
	for f := range files {
		path := filepath.Join(dir, fmt.Sprintf("part-%02d.recordio", f))
		record := func(i int) []byte { return fmt.Appendf(nil, "part %02d record %04d", f, i) }
		if err := recordio.WriteFile(path, 1000, record, recordio.WithMaxChunkBytes(20*len(record(0)))); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "part-*.recordio")
}

func call(t *testing.T, addr, method string, args, reply any) error {
	t.Helper()
	c, err := rpc.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	return c.Call(method, args, reply)
}

func status(t *testing.T, addr string) wire.Status {
	t.Helper()
	var st wire.Status
	if err := call(t, addr, "Master.Status", 0, &st); err != nil {
		t.Fatal(err)
	}
	return st
}
