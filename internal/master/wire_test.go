package master

import (
	"io"
	"net"
	"net/rpc"
	"net/rpc/jsonrpc"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/trainerport"
)

// startServer serves s on a loopback port.
func startServer(t *testing.T, s *Service) string {
	return startServerB(t, s)
}

func startServerB(t testing.TB, s *Service) string {
	t.Helper()
	lis := listenLoopback(t)
	serveOn(t, s, trainerport.Config{Log: quietLog()}, lis)
	return lis.Addr().String()
}

// TestWireContract talks to the master with a plain net/rpc client, as a
// trainer in another program would, using only the documented names: in
// gob, and in JSON-RPC on the same port.
func TestWireContract(t *testing.T) {
	for _, codec := range []struct {
		name string
		dial func(addr string) (*rpc.Client, error)
	}{
		{"gob", func(addr string) (*rpc.Client, error) { return rpc.Dial("tcp", addr) }},
		{"json", func(addr string) (*rpc.Client, error) { return jsonrpc.Dial("tcp", addr) }},
	} {
		t.Run(codec.name, func(t *testing.T) {
			pattern := writeDataset(t, t.TempDir(), 2, 3)
			s, _ := newService(t, Config{ChunksPerTask: 4})
			c, err := codec.dial(startServer(t, s))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			checkContract(t, c, pattern)
		})
	}
}

// checkContract runs a job of 2 tasks through c: every method, every
// report, the error texts.
func checkContract(t *testing.T, c *rpc.Client, pattern string) {
	var task wire.Task
	err := c.Call("Master.GetTask", wire.Task{}, &task)
	if err == nil || err.Error() != "dataset not reported" {
		t.Fatalf("GetTask first: %v", err)
	}
	var dummy int
	if err := c.Call("Master.ReportDataset", []string{pattern}, &dummy); err != nil {
		t.Fatal(err)
	}
	if err := c.Call("Master.GetTask", wire.Task{}, &task); err != nil {
		t.Fatal(err)
	}
	if task.Index != 0 || task.Epoch != 1 || task.Pass != 0 || len(task.Blocks) != 4 {
		t.Fatalf("task %+v", task)
	}
	if b := task.Blocks[3]; !strings.HasSuffix(b.Path, "part-001.recordio") || b.Idx != 0 || b.Offset != 0 || b.NumRecords != 3 {
		t.Fatalf("block crossing into the second file: %+v", b)
	}
	var second wire.Task
	if err := c.Call("Master.GetTask", wire.Task{}, &second); err != nil {
		t.Fatal(err)
	}
	var none wire.Task
	if err := c.Call("Master.GetTask", wire.Task{}, &none); err == nil || err.Error() != "no task available" {
		t.Fatalf("GetTask with all pending: %v", err)
	}
	failed := second
	failed.Error = "cannot read block"
	var rep int
	if err := c.Call("Master.TaskFailed", failed, &rep); err != nil || wire.Report(rep) != wire.Recorded {
		t.Fatalf("TaskFailed: %v %d", err, rep)
	}
	if err := c.Call("Master.TaskFinished", task, &rep); err != nil || wire.Report(rep) != wire.Recorded {
		t.Fatalf("TaskFinished: %v %d", err, rep)
	}
	if err := c.Call("Master.TaskFinished", task, &rep); err != nil || wire.Report(rep) != wire.AlreadyDone {
		t.Fatalf("TaskFinished again: %v %d", err, rep)
	}
	var again wire.Task
	if err := c.Call("Master.GetTask", wire.Task{}, &again); err != nil || again.Index != second.Index || again.Epoch != 2 {
		t.Fatalf("redispatch: %+v %v", again, err)
	}
	if err := c.Call("Master.GetTask", again, &none); err == nil || err.Error() != "all passes done" {
		t.Fatalf("after the last task: %v", err)
	}
	if err := c.Call("Master.TaskFinished", wire.Task{Index: 77, Epoch: 1}, &rep); err == nil || !strings.Contains(err.Error(), "task 77 does not exist") {
		t.Fatalf("unknown task: %v", err)
	}
	var st wire.Status
	if err := c.Call("Master.Status", 0, &st); err != nil || !st.AllDone || st.Records != 18 || st.Tasks != 2 {
		t.Fatalf("status %+v %v", st, err)
	}
}

// TestHostileConnections sends garbage, half-closes and disconnects mid-call;
// the master keeps serving a well-behaved client.
func TestHostileConnections(t *testing.T) {
	pattern := writeDataset(t, t.TempDir(), 1, 2)
	s, _ := newService(t, Config{ChunksPerTask: 1})
	addr := startServer(t, s)
	for _, payload := range [][]byte{
		[]byte("GET / HTTP/1.0\r\n\r\n"),
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f},
		{0x05, 0x01, 0x02},
		{},
	} {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conn.Write(payload)
		conn.(*net.TCPConn).CloseWrite()
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		io.Copy(io.Discard, conn) // the master closes its side
		conn.Close()
	}
	// A client that sends a call and vanishes before the reply.
	quitter, err := rpc.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	var unread int // the quitter's own: its reply may still be decoded into it
	quitter.Go("Master.ReportDataset", []string{pattern}, &unread, nil)
	quitter.Close()

	c, err := rpc.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var dummy int
	if err := c.Call("Master.ReportDataset", []string{pattern}, &dummy); err != nil {
		t.Fatal(err)
	}
	var task wire.Task
	if err := c.Call("Master.GetTask", wire.Task{}, &task); err != nil || task.Epoch != 1 {
		t.Fatalf("after hostile clients: %+v %v", task, err)
	}
}

// TestThousandIdleConnections: a thousand connections held open and idle
// cost little and do not keep a real client from being served.
func TestThousandIdleConnections(t *testing.T) {
	pattern := writeDataset(t, t.TempDir(), 1, 2)
	s, _ := newService(t, Config{ChunksPerTask: 1})
	addr := startServer(t, s)
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var idle []net.Conn
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	for range 1000 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("connection %d: %v", len(idle), err)
		}
		idle = append(idle, c)
	}
	c, err := rpc.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var dummy int
	if err := c.Call("Master.ReportDataset", []string{pattern}, &dummy); err != nil {
		t.Fatal(err)
	}
	var task wire.Task
	if err := c.Call("Master.GetTask", wire.Task{}, &task); err != nil || task.Epoch != 1 {
		t.Fatalf("with 1,000 idle connections: %+v %v", task, err)
	}
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	grown := int64(after.HeapInuse) - int64(before.HeapInuse)
	t.Logf("heap grew %d KiB for 1,000 idle connections", grown>>10)
	if grown > 64<<20 {
		t.Fatalf("heap grew %d MiB for 1,000 idle connections", grown>>20)
	}
}
