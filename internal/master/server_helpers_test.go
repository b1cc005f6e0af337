package master

import (
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pkg/errors"
	"github.com/sirupsen/logrus"
)

// portLog is a log output that tests read while the server writes it.
type portLog struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (l *portLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *portLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *portLog) count(text string) int { return strings.Count(l.String(), text) }

// await waits until text appears n times in the log.
func (l *portLog) await(t *testing.T, text string, n int, limit time.Duration) {
	t.Helper()
	if !awaitCount(l, text, n, limit) {
		t.Fatalf("%q not %d times in the log after %v:\n%s", text, n, limit, l.String())
	}
}

// awaitCount waits until text appears n times in the log, and says
// whether it did within limit.
func awaitCount(l *portLog, text string, n int, limit time.Duration) bool {
	for deadline := time.Now().Add(limit); l.count(text) < n; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

// port is a Server under test on a loopback port, with its log.
type port struct {
	addr string
	srv  *Server
	log  *portLog
}

// startPort serves s with cfg (its Log replaced) on a new loopback port.
func startPort(t *testing.T, s *Service, cfg ServerConfig) *port {
	t.Helper()
	return startPortOn(t, s, cfg, listenLoopback(t))
}

func listenLoopback(t testing.TB) net.Listener {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return lis
}

// startPortOn serves s with cfg on lis; Serve must return nil once the
// test closes the server.
func startPortOn(t *testing.T, s *Service, cfg ServerConfig, lis net.Listener) *port {
	t.Helper()
	p := &port{addr: lis.Addr().String(), log: &portLog{}}
	log := logrus.New()
	log.SetOutput(p.log)
	log.SetLevel(logrus.DebugLevel)
	cfg.Log = log
	p.srv = serveOn(t, s, cfg, lis)
	return p
}

// serveOn serves s with cfg on lis until the test ends; Serve must then
// return nil.
func serveOn(t testing.TB, s *Service, cfg ServerConfig, lis net.Listener) *Server {
	t.Helper()
	srv, err := NewServerWith(s, cfg)
	if err != nil {
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

// awaitClosed waits until the master closes conn: a read ends with EOF or
// a reset instead of timing out.
func awaitClosed(t *testing.T, conn net.Conn, limit time.Duration) {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(limit))
	_, err := io.Copy(io.Discard, conn)
	var ne net.Error
	if isTimeout := err != nil && errors.As(err, &ne) && ne.Timeout(); isTimeout {
		t.Fatalf("the master did not close the connection within %v", limit)
	}
}
