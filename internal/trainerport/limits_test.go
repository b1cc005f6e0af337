package trainerport_test

import (
	"bytes"
	"encoding/gob"
	"fmt"
	"net"
	"net/rpc"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/trainerport"
	"github.com/trainmaster/master/internal/trainerport/porttest"
)

// TestRequestSizeLimit: a request argument over MaxRequestBytes is
// answered an error naming its size, the limit and the flag, and the
// connection goes on; a header over it, or bytes that are not gob, close
// the connection with a log line.
func TestRequestSizeLimit(t *testing.T) {
	const limit = 64 << 10
	p := startPort(t, trainerport.Config{Limits: trainerport.Limits{MaxRequestBytes: limit}})
	t.Run("argument", func(t *testing.T) {
		c, err := rpc.Dial("tcp", p.Addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var dummy int
		huge := []string{strings.Repeat("x", 4*limit)}
		for range 3 { // and again: the stream stays in step
			err = c.Call("Master.ReportDataset", huge, &dummy)
			want := fmt.Sprintf("over the limit of %d bytes (the master's -max-request-bytes)", limit)
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "request of 2621") {
				t.Fatalf("ReportDataset of %d bytes answered %v", 4*limit, err)
			}
			var st wire.Status
			if err := c.Call("Master.Status", 0, &st); err != nil {
				t.Fatalf("the connection did not go on: %v", err)
			}
		}
		p.Log.Await(t, "refused a request over -max-request-bytes", 1, 5*time.Second)
	})
	for _, tc := range []struct {
		name string
		send func(conn net.Conn) error
		log  string
	}{
		{"header", func(conn net.Conn) error {
			return gob.NewEncoder(conn).Encode(rpc.Request{ServiceMethod: strings.Repeat("M", 2*limit), Seq: 1})
		}, "closing a connection: request header over -max-request-bytes"},
		{"not gob", func(conn net.Conn) error {
			_, err := conn.Write([]byte{0x80, 1, 2, 3})
			return err
		}, "closing a connection: not a gob stream"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", p.Addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			go tc.send(conn) // may fail once the master closes
			porttest.AwaitClosed(t, conn, 5*time.Second)
			p.Log.Await(t, tc.log, 1, 5*time.Second)
		})
	}
}

// TestInflightSlotsFreedOncePerRequest: with MaxInflight 2, requests the
// master cannot serve (argument too large, of the wrong type, no such
// method) each free their slot: a good call still goes through after many
// of them, and so do more concurrent calls than there are slots.
func TestInflightSlotsFreedOncePerRequest(t *testing.T) {
	p := startPort(t, trainerport.Config{Limits: trainerport.Limits{MaxInflight: 2, MaxRequestBytes: 1 << 10}})
	c, err := rpc.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	bad := []struct {
		method string
		arg    any
	}{
		{"Master.ReportDataset", []string{strings.Repeat("x", 4<<10)}},
		{"Master.GetTask", "not a task"},
		{"Master.NoSuchMethod", 0},
		{"NoSuchService.Status", 0},
	}
	for range 3 {
		for _, b := range bad {
			err := porttest.Within(c.Go(b.method, b.arg, new(int), nil), 10*time.Second)
			if err == nil || strings.Contains(err.Error(), "no reply in") {
				t.Fatalf("%s(%T) answered %v", b.method, b.arg, err)
			}
		}
	}
	calls := make([]*rpc.Call, 50)
	for i := range calls {
		calls[i] = c.Go("Master.Status", 0, new(wire.Status), nil)
	}
	timeout := time.After(10 * time.Second)
	for i, call := range calls {
		select {
		case <-call.Done:
			if call.Error != nil {
				t.Fatalf("call %d: %v", i, call.Error)
			}
		case <-timeout:
			t.Fatalf("call %d of 50 unanswered: a slot was not freed", i)
		}
	}
}

// TestPipelinedFloodBounded: a client that pipelines calls without reading
// the replies makes the master stop reading it once MaxInflight replies
// wait, instead of starting a goroutine for every request it sends.
func TestPipelinedFloodBounded(t *testing.T) {
	gobFlood := func(flood *bytes.Buffer) {
		enc := gob.NewEncoder(flood)
		for seq := range 400_000 {
			enc.Encode(rpc.Request{ServiceMethod: "Master.Status", Seq: uint64(seq)})
			enc.Encode(0)
		}
	}
	jsonFlood := func(flood *bytes.Buffer) {
		for seq := range 400_000 {
			fmt.Fprintf(flood, `{"method":"Master.Status","params":[0],"id":%d}`+"\n", seq)
		}
	}
	t.Run("gob", func(t *testing.T) { floodBounded(t, gobFlood) })
	t.Run("json", func(t *testing.T) { floodBounded(t, jsonFlood) })
}

// floodBounded sends the calls write encodes on one connection without
// reading the replies, and checks the master stops reading them.
func floodBounded(t *testing.T, write func(*bytes.Buffer)) {
	const inflight = 8
	p := startPort(t, trainerport.Config{Limits: trainerport.Limits{MaxInflight: inflight}})
	var flood bytes.Buffer
	write(&flood)
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	conn, err := d.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	before := runtime.NumGoroutine()
	wrote := make(chan error, 1)
	go func() {
		_, err := conn.Write(flood.Bytes())
		wrote <- err
	}()
	peak := peakGoroutines(wrote, 3*time.Second)
	conn.Close()
	t.Logf("%d bytes of pipelined calls; goroutines %d before, at most %d during", flood.Len(), before, peak)
	// At most inflight calls are served at once; the goroutines of calls
	// that have sent their reply and are exiting add a few more.
	if peak > before+inflight+64 {
		t.Fatalf("%d goroutines during the flood, %d before: the master kept reading past %d calls in flight", peak, before, inflight)
	}
}

// peakGoroutines samples the number of goroutines until done delivers or
// limit passes, and returns the highest.
func peakGoroutines(done <-chan error, limit time.Duration) int {
	peak := runtime.NumGoroutine()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	end := time.After(limit)
	for {
		select {
		case <-done:
			return peak
		case <-end:
			return peak
		case <-tick.C:
			peak = max(peak, runtime.NumGoroutine())
		}
	}
}
