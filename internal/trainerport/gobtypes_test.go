package trainerport_test

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/rpc"
	"reflect"
	"testing"
	"time"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/etcdembed/etcdtest"
	"github.com/trainmaster/master/internal/trainerport"
	"github.com/trainmaster/master/internal/trainerport/porttest"
)

// mirror is a service whose calls answer their argument.
type mirror struct{}

func (mirror) Task(t wire.Task, reply *wire.Task) error { *reply = t; return nil }

func (mirror) Progress(p wire.Progress, reply *wire.Progress) error { *reply = p; return nil }

func (mirror) Strings(s []string, reply *[]string) error { *reply = s; return nil }

// TestIdleDecoderGivenBack: a gob connection that gives its decoder back
// whenever it waits (SetDecoderIdle 0) decodes every later call as the
// first: each new decoder is given the types the client sent before, and
// learns those it sends after; over TLS too.
func TestIdleDecoderGivenBack(t *testing.T) {
	certs := etcdtest.GenerateCerts(t)
	for _, tc := range []struct {
		name   string
		server *tls.Config
		client *tls.Config
	}{
		{"plain", nil, nil},
		{"tls", porttest.TLS(t, certs.ServerCert, certs.ServerKey, ""), etcdtest.ClientTLSNoCert(t, certs)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := porttest.Start(t, trainerport.Config{TLS: tc.server}, func(srv *trainerport.Server) error {
				trainerport.SetDecoderIdle(srv, 0)
				return srv.Register("Mirror", mirror{}, nil)
			})
			var conn net.Conn
			var err error
			if tc.client != nil {
				conn, err = tls.Dial("tcp", p.Addr, tc.client)
			} else {
				conn, err = net.Dial("tcp", p.Addr)
			}
			if err != nil {
				t.Fatal(err)
			}
			c := rpc.NewClient(conn)
			defer c.Close()
			calls := []struct {
				method   string
				arg, got any
			}{
				{"Mirror.Strings", []string{"a", "b"}, new([]string)},
				{"Mirror.Task", wire.Task{Index: 7, Trainer: "t", Blocks: []wire.Block{{Path: "f", Offset: 3}}}, new(wire.Task)},
				{"Mirror.Progress", wire.Progress{Index: 7, Done: 12, Trainer: "t"}, new(wire.Progress)},
			}
			for round := range 3 {
				for _, call := range calls { // one at a time: the decoder given back between them
					mirrored(t, c.Call(call.method, call.arg, call.got), call.arg, call.got)
				}
				var pending []*rpc.Call
				for i := range 20 { // pipelined: some find their bytes waiting
					call := calls[(i+round)%len(calls)]
					pending = append(pending, c.Go(call.method, call.arg, reflect.New(reflect.TypeOf(call.arg)).Interface(), nil))
				}
				for _, call := range pending {
					mirrored(t, porttest.Within(call, 10*time.Second), call.Args, call.Reply)
				}
			}
		})
	}
}

// mirrored checks that a call answered its argument.
func mirrored(t *testing.T, err error, arg, reply any) {
	t.Helper()
	if err != nil {
		t.Fatalf("%T: %v", arg, err)
	}
	if got := reflect.ValueOf(reply).Elem().Interface(); !reflect.DeepEqual(got, arg) {
		t.Fatalf("answered %s, want %s", fmt.Sprint(got), fmt.Sprint(arg))
	}
}
