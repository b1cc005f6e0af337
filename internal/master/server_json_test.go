package master

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/rpc"
	"net/rpc/jsonrpc"
	"strings"
	"testing"
	"time"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/etcdembed/etcdtest"
)

// jsonSession writes each line as typed to a new connection and returns
// the replies, one decoded object per line.
func jsonSession(t *testing.T, addr string, lines ...string) []map[string]any {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	dec := json.NewDecoder(bufio.NewReader(conn))
	var replies []map[string]any
	for _, line := range lines {
		if _, err := fmt.Fprintln(conn, line); err != nil {
			t.Fatal(err)
		}
		var reply map[string]any
		if err := dec.Decode(&reply); err != nil {
			t.Fatalf("reply to %s: %v", line, err)
		}
		replies = append(replies, reply)
	}
	return replies
}

// TestJSONSession: the shapes doc/protocol.md shows, as a person typing
// them (or a program in any language) sends and reads them.
func TestJSONSession(t *testing.T) {
	pattern := writeDataset(t, t.TempDir(), 1, 2)
	s, _ := newService(t, Config{ChunksPerTask: 1})
	addr := startServer(t, s)
	replies := jsonSession(t, addr,
		`{"method":"Master.GetTask","params":[{"Index":0,"Epoch":0,"Pass":0,"Trainer":"gpu7-4242"}],"id":1}`,
		fmt.Sprintf(`{"method":"Master.ReportDataset","params":[[%q]],"id":2}`, pattern),
		`{"method":"Master.GetTask","params":[{"Trainer":"gpu7-4242"}],"id":3}`,
		`{"method":"Master.TaskFinished","params":[{"Index":0,"Epoch":1,"Pass":0,"Blocks":[{},{},{}],"Trainer":"gpu7-4242"}],"id":4}`,
		`{"method":"Master.TaskFailed","params":[{"Index":1,"Epoch":1,"Pass":0,"Error":"cannot read"}],"id":5}`,
		`{"method":"Master.Status","params":[0],"id":6}`,
		`{"method":"Master.TaskProgress","params":[{"Index":0,"Epoch":1,"Pass":0,"Done":2}],"id":7}`,
	)
	for i, want := range []string{
		`{"error":"dataset not reported","id":1,"result":null}`,
		`{"error":null,"id":2,"result":0}`,
		`{"error":null,"id":3,"result":{"Blocks":[{"Idx":0,"NumRecords":3,"Offset":0,"Path":` + fmt.Sprintf("%q", strings.Replace(pattern, "*", "000", 1)) + `}],"Epoch":1,"Error":"","Index":0,"Pass":0}}`,
		`{"error":null,"id":4,"result":1}`,
		`{"error":"taskqueue: epoch from the future: task 1 epoch 1, it has had 0 dispatches in pass 0","id":5,"result":null}`,
	} {
		got, _ := json.Marshal(replies[i])
		if string(got) != want {
			t.Errorf("reply %d: %s\nwant     %s", i+1, got, want)
		}
	}
	if st := replies[5]["result"].(map[string]any); st["Done"] != 1.0 || st["Todo"] != 1.0 || st["Tasks"] != 2.0 {
		t.Errorf("status %v", replies[5])
	}
	if got, _ := json.Marshal(replies[6]); string(got) != `{"error":null,"id":7,"result":{"Report":2}}` {
		t.Errorf("progress of a task done: %s", got)
	}
}

// TestJSONWithinTheLocks: the token, TLS and the request size limit apply
// to JSON-RPC as to gob; a JSON request over the limit closes its
// connection, and the port goes on serving.
func TestJSONWithinTheLocks(t *testing.T) {
	const token = "j50n-T0ken"
	certs := etcdtest.GenerateCerts(t)
	serverTLS, err := ServerTLS(certs.ServerCert, certs.ServerKey, "")
	if err != nil {
		t.Fatal(err)
	}
	s, _ := newService(t, Config{ChunksPerTask: 1})
	p := startPort(t, s, ServerConfig{TLS: serverTLS, Token: token, Limits: Limits{MaxRequestBytes: 4 << 10}})
	dial := func() *rpc.Client {
		conn, err := tls.Dial("tcp", p.addr, etcdtest.ClientTLSNoCert(t, certs))
		if err != nil {
			t.Fatal(err)
		}
		return jsonrpc.NewClient(conn)
	}
	plain := jsonSession(t, p.addr, `{"method":"Master.Status","params":[0],"id":1}`)
	if e, _ := plain[0]["error"].(string); !strings.Contains(e, "this port speaks TLS") {
		t.Fatalf("a plain JSON client on the TLS port was answered %v", plain[0])
	}
	c := dial()
	var st wire.Status
	if err := c.Call("Master.Status", 0, &st); err == nil || !strings.Contains(err.Error(), wire.TextUnauthorized) {
		t.Fatalf("a JSON call before Authenticate answered %v", err)
	}
	c.Close()
	c = dial()
	defer c.Close()
	if err := c.Call("Master.Authenticate", token, new(int)); err != nil {
		t.Fatal(err)
	}
	if err := c.Call("Master.Status", 0, &st); err != nil {
		t.Fatalf("a JSON call after Authenticate over TLS: %v", err)
	}
	err = c.Call("Master.ReportDataset", []string{strings.Repeat("p", 8<<10)}, new(int))
	if err == nil {
		t.Fatal("a JSON request over the size limit was answered")
	}
	p.log.await(t, "closing a connection: JSON-RPC request over -max-request-bytes", 1, 5*time.Second)
	again := dial()
	defer again.Close()
	if err := again.Call("Master.Authenticate", token, new(int)); err != nil {
		t.Fatalf("the port after a request over the limit: %v", err)
	}
}
