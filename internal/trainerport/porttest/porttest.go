// Package porttest serves a trainer port on loopback for tests, with a log
// they can read while the port writes it, and the waits such tests share.
package porttest

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/rpc"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pkg/errors"
	"github.com/sirupsen/logrus"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/credfile"
	"github.com/trainmaster/master/internal/ratelog"
	"github.com/trainmaster/master/internal/trainerport"
)

// Log is a log output that tests read while the server writes it.
type Log struct {
	mu  sync.Mutex // guards buf
	buf strings.Builder
}

func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *Log) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// Count says how many times text appears in the log.
func (l *Log) Count(text string) int { return strings.Count(l.String(), text) }

// Await waits until text appears n times in the log.
func (l *Log) Await(t testing.TB, text string, n int, limit time.Duration) {
	t.Helper()
	if !l.AwaitCount(text, n, limit) {
		t.Fatalf("%q not %d times in the log after %v:\n%s", text, n, limit, l.String())
	}
}

// AwaitCount waits until text appears n times in the log, and says whether
// it did within limit.
func (l *Log) AwaitCount(text string, n int, limit time.Duration) bool {
	for deadline := time.Now().Add(limit); l.Count(text) < n; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

// Port is a Server under test on a loopback port, with its log.
type Port struct {
	Addr   string
	Server *trainerport.Server
	Log    *Log
}

// Start serves, with cfg (its Log replaced, at debug level), what register
// registers, on a new loopback port.
func Start(t testing.TB, cfg trainerport.Config, register func(*trainerport.Server) error) *Port {
	t.Helper()
	return StartOn(t, cfg, Listen(t), register)
}

// StartOn is Start on lis.
func StartOn(t testing.TB, cfg trainerport.Config, lis net.Listener, register func(*trainerport.Server) error) *Port {
	t.Helper()
	p := &Port{Addr: lis.Addr().String(), Log: &Log{}}
	log := logrus.New()
	log.SetOutput(p.Log)
	log.SetLevel(logrus.DebugLevel)
	cfg.Log = log
	p.Server = Serve(t, cfg, lis, register)
	return p
}

// Listen opens a loopback port.
func Listen(t testing.TB) net.Listener {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return lis
}

// Serve serves, with cfg (no Warnings: the limiter the leader sets), what
// register registers on lis until the test ends; Serve must then return
// nil.
func Serve(t testing.TB, cfg trainerport.Config, lis net.Listener, register func(*trainerport.Server) error) *trainerport.Server {
	t.Helper()
	if cfg.Warnings == nil {
		cfg.Warnings = ratelog.New(ratelog.Interval, time.Now) // as the leader does
	}
	srv, err := trainerport.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := register(srv); err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	t.Cleanup(func() {
		srv.Close()
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return srv
}

// AwaitClosed waits until the server closes conn: a read ends with EOF or
// a reset instead of timing out.
func AwaitClosed(t testing.TB, conn net.Conn, limit time.Duration) {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(limit))
	_, err := io.Copy(io.Discard, conn)
	var ne net.Error
	if isTimeout := err != nil && errors.As(err, &ne) && ne.Timeout(); isTimeout {
		t.Fatalf("the master did not close the connection within %v", limit)
	}
}

// StatusWithin calls Master.Status on a new connection to addr, giving up
// after limit.
func StatusWithin(addr string, limit time.Duration) error {
	c, err := rpc.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	return Within(c.Go(wire.ServiceName+".Status", 0, new(wire.Status), nil), limit)
}

// Within waits for call up to limit and returns its error.
func Within(call *rpc.Call, limit time.Duration) error {
	select {
	case <-call.Done:
		return call.Error
	case <-time.After(limit):
		return errors.Errorf("%s: no reply in %v", call.ServiceMethod, limit)
	}
}

// Dial opens a connection to addr whose reads and writes fail after
// limit; it is closed when the test ends.
func Dial(t testing.TB, addr string, limit time.Duration) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(limit))
	return conn
}

// JSONSession writes each line as typed to a new connection to addr and
// returns the replies, one decoded object per line.
func JSONSession(t testing.TB, addr string, lines ...string) []map[string]any {
	t.Helper()
	conn := Dial(t, addr, 10*time.Second)
	defer conn.Close()
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

// TLS is the port's TLS configuration of the certificate and key in
// certFile and keyFile and, unless clientCAFile is "", the client CAs it
// holds, read as cmd/master reads its flags' files.
func TLS(t testing.TB, certFile, keyFile, clientCAFile string) *tls.Config {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if clientCAFile == "" {
		return trainerport.ServerTLS(cert, nil)
	}
	pool, err := credfile.CertPool(clientCAFile)
	if err != nil {
		t.Fatal(err)
	}
	return trainerport.ServerTLS(cert, pool)
}
