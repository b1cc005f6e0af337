package trainerport_test

import (
	"bufio"
	"errors"
	"net"
	"net/rpc"
	"net/rpc/jsonrpc"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/trainerport"
	"github.com/trainmaster/master/internal/trainerport/porttest"
)

// echo is a service whose calls answer their argument, or fail with it.
type echo struct{}

func (echo) Echo(s string, reply *string) error {
	*reply = s
	return nil
}

func (echo) Fail(s string, reply *string) error { return errors.New("failed: " + s) }

// TestJSONAsJSONRPC: the port answers JSON-RPC byte for byte as the
// standard library's net/rpc/jsonrpc does, ids, errors and malformed
// requests included, one request at a time and pipelined in one write.
func TestJSONAsJSONRPC(t *testing.T) {
	p := porttest.Start(t, trainerport.Config{}, func(srv *trainerport.Server) error { return srv.Register("Echo", echo{}, nil) })
	reference := serveJSONRPC(t, "Echo", echo{})
	for _, tc := range []struct {
		name  string
		sends []string // each written at once, then as many replies read as it holds lines
	}{
		{"ids", []string{
			`{"method":"Echo.Echo","params":["hi"],"id":1}`,
			`{"method":"Echo.Echo","params":["hi"],"id":"one"}`,
			`{"method":"Echo.Echo","params":["hi"],"id":{"a":[1, 2.5e3]}}`,
			`{"method":"Echo.Echo","params":["hi"],"id":null}`,
			`{"method":"Echo.Echo","params":["hi"]}`,
			`{"Method":"Echo.Echo","PARAMS":["case"],"Id":7,"jsonrpc":"2.0"}`,
		}},
		{"errors", []string{
			`{"method":"Echo.Fail","params":["why"],"id":1}`,
			`{"method":"Echo.Echo","id":2}`,
			`{"method":"Echo.Echo","params":null,"id":3}`,
			`{"method":"Echo.Echo","params":{"s":"x"},"id":4}`,
			`{"method":"Echo.Echo","params":[5],"id":5}`,
			`{"method":"Echo.Echo","params":["a","b"],"id":6}`,
			`{"method":"Echo.Nope","params":["x"],"id":7}`,
			`{"method":"Nobody.Echo","params":["x"],"id":8}`,
			`{"method":"Echo","params":["x"],"id":9}`,
		}},
		{"pipelined", []string{
			`{"method":"Echo.Echo","params":["a"],"id":1}` + "\n" + `{"method":"Echo.Fail","params":["b"],"id":2}` + "\n \t\r\n" +
				`{"method":"Echo.Echo","params":["c"],"id":3}`,
			" \n",
			`{"method":"Echo.Echo","params":["d"],"id":4}{"method":"Echo.Echo","params":["e"],"id":5}`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, want := jsonReplies(t, p.Addr, tc.sends), jsonReplies(t, reference, tc.sends)
			if !slices.Equal(got, want) {
				t.Fatalf("the port answered\n%s\nnet/rpc/jsonrpc answers\n%s", strings.Join(got, ""), strings.Join(want, ""))
			}
		})
	}
}

// serveJSONRPC serves rcvr under name with net/rpc/jsonrpc on a loopback
// port, until the test ends.
func serveJSONRPC(t *testing.T, name string, rcvr any) string {
	srv := rpc.NewServer()
	if err := srv.RegisterName(name, rcvr); err != nil {
		t.Fatal(err)
	}
	lis := porttest.Listen(t)
	t.Cleanup(func() { lis.Close() })
	go func() {
		for {
			conn, err := lis.Accept()
			if err != nil {
				return
			}
			go srv.ServeCodec(jsonrpc.NewServerCodec(conn))
		}
	}()
	return lis.Addr().String()
}

// jsonReplies writes each of sends to a new connection to addr, reads as
// many reply lines as the requests it holds, and returns the replies,
// sorted within each send (calls in one write may be answered in any
// order).
func jsonReplies(t *testing.T, addr string, sends []string) []string {
	t.Helper()
	conn := porttest.Dial(t, addr, 10*time.Second)
	defer conn.Close()
	in := bufio.NewReader(conn)
	var replies []string
	for _, send := range sends {
		if _, err := conn.Write([]byte(send)); err != nil {
			t.Fatal(err)
		}
		var these []string
		for range strings.Count(send, `"method"`) + strings.Count(send, `"Method"`) {
			line, err := in.ReadString('\n')
			if err != nil {
				t.Fatalf("after %q: %v", send, err)
			}
			these = append(these, line)
		}
		slices.Sort(these)
		replies = append(replies, these...)
	}
	return replies
}

// TestCallsOfOneConnectionConcurrent: a call in flight does not hold back
// the next calls of its connection, in either encoding.
func TestCallsOfOneConnectionConcurrent(t *testing.T) {
	for _, codec := range []string{"gob", "json"} {
		t.Run(codec, func(t *testing.T) {
			store := newHeld()
			p := porttest.Start(t, trainerport.Config{}, serving(&receiver{held: store}, nil))
			t.Cleanup(store.let) // runs before the server's Close, which waits for the call
			conn, err := net.Dial("tcp", p.Addr)
			if err != nil {
				t.Fatal(err)
			}
			newClient := rpc.NewClient
			if codec == "json" {
				newClient = jsonrpc.NewClient
			}
			c := newClient(conn)
			defer c.Close()
			held := c.Go("Master.ReportDataset", []string{"pattern"}, new(int), nil)
			<-store.entered
			for range 3 {
				if err := porttest.Within(c.Go("Master.Status", 0, new(wire.Status), nil), 10*time.Second); err != nil {
					t.Fatalf("a call while another is in flight: %v", err)
				}
			}
			store.let()
			if err := porttest.Within(held, 10*time.Second); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestCloseEndsEveryRequestGoroutine: once Close returns, no goroutine of
// the port serves a connection any more: not one waiting for a request,
// nor one in the middle of reading one, nor one serving a call.
func TestCloseEndsEveryRequestGoroutine(t *testing.T) {
	store := newHeld()
	srv, err := trainerport.NewServer(trainerport.Config{Log: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Register(wire.ServiceName, &receiver{held: store}, nil); err != nil {
		t.Fatal(err)
	}
	lis := porttest.Listen(t)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	addr := lis.Addr().String()
	idle, err := rpc.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	if err := idle.Call("Master.Status", 0, new(wire.Status)); err != nil {
		t.Fatal(err)
	}
	busy, err := rpc.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	held := busy.Go("Master.ReportDataset", []string{"pattern"}, new(int), nil)
	<-store.entered
	half, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer half.Close()
	if _, err := half.Write([]byte{0x40, 1, 2}); err != nil { // a message of 64 bytes, begun
		t.Fatal(err)
	}
	closing := make(chan error, 1)
	go func() { // once Close has closed the listener, and before it waits
		err := <-served
		store.let()
		closing <- err
	}()
	srv.Close()
	// A connection's own goroutine may still be returning: what must be
	// gone are those reading and serving its requests.
	if n := goroutinesIn("trainerport.(*trainerConn).serveNext", "net/rpc.(*Server).ServeRequest"); n > 0 {
		t.Errorf("%d goroutines still serve requests after Close returned", n)
	}
	if err := <-closing; err != nil {
		t.Fatal(err)
	}
	if err := porttest.Within(held, 10*time.Second); err != nil {
		t.Fatalf("the call in flight at Close: %v", err)
	}
}

// unencodable is a service whose reply gob cannot encode.
type unencodable struct{}

func (unencodable) Chan(_ int, reply *chan int) error {
	*reply = make(chan int)
	return nil
}

// TestUnencodableReplyClosesTheConnection: a gob reply that cannot be
// encoded whole is not sent in part: the connection is closed, its stream
// being out of step, and the port serves other connections.
func TestUnencodableReplyClosesTheConnection(t *testing.T) {
	p := porttest.Start(t, trainerport.Config{}, func(srv *trainerport.Server) error {
		if err := srv.Register("Odd", unencodable{}, nil); err != nil {
			return err
		}
		return srv.Register(wire.ServiceName, &receiver{}, nil)
	})
	c, err := rpc.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Call("Master.Status", 0, new(wire.Status)); err != nil {
		t.Fatal(err)
	}
	if err := porttest.Within(c.Go("Odd.Chan", 0, new(chan int), nil), 10*time.Second); err == nil || strings.Contains(err.Error(), "no reply in") {
		t.Fatalf("a reply that cannot be encoded answered %v, want the connection closed", err)
	}
	if err := c.Call("Master.Status", 0, new(wire.Status)); err != rpc.ErrShutdown {
		t.Fatalf("the connection after it answered %v, want %v", err, rpc.ErrShutdown)
	}
	if err := porttest.StatusWithin(p.Addr, 10*time.Second); err != nil {
		t.Fatalf("the port after it: %v", err)
	}
}
