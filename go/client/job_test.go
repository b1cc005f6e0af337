package client_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/trainmaster/master/go/client"
	"github.com/trainmaster/master/internal/master"
	"github.com/trainmaster/master/internal/master/mastertest"
	"github.com/trainmaster/master/internal/trainerport"
)

// job is the real master (internal/master's Service, served by its net/rpc
// server on loopback) for the tests of named datasets, which the fake
// master does not know. Its datasets are kept in a MemoryCatalog, so that
// restart can replace the master by a new one that restores them, as a
// standby does from etcd; clients reach it through a proxy that stays at
// one address.
type job struct {
	cfg   master.Config
	svc   *master.Service // the current master
	proxy *proxy
}

// startJob starts a master configured by cfg (its Catalog and Log set
// here). It checks, when the test ends, that every goroutine started
// meanwhile has stopped.
func startJob(t *testing.T, cfg master.Config) *job {
	t.Helper()
	checkGoroutines(t)
	quiet := logrus.New()
	quiet.SetOutput(io.Discard)
	cfg.Log, cfg.Catalog = quiet, master.NewMemoryCatalog(nil)
	j := &job{cfg: cfg}
	j.proxy = startProxy(t, j.serve(t), "Master.DeclareDataset")
	return j
}

// serve starts a master on the job's catalog, restored from it, and
// returns its address.
func (j *job) serve(t *testing.T) string {
	t.Helper()
	svc, err := master.New(j.cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Close)
	if err := svc.Restore(context.Background()); err != nil {
		t.Fatal(err)
	}
	j.svc = svc
	return mastertest.Serve(t, svc, trainerport.Config{Log: j.cfg.Log})
}

// restart stops the master, as a crash or a lost leadership does, and
// starts a new one on the same catalog, or on a new one if lost (a master
// without persistence); the clients' connections drop and their calls go
// to the new master. The proxy counts the calls afresh.
func (j *job) restart(t *testing.T, lost bool) {
	t.Helper()
	j.svc.Close()
	if lost {
		j.cfg.Catalog = master.NewMemoryCatalog(nil)
	}
	j.proxy.redirect(j.serve(t))
}

// client returns a client of the job, closed when the test ends.
func (j *job) client(t *testing.T, cfg client.Config) *client.Client {
	c := client.New(client.Static(j.proxy.addr()), cfg)
	t.Cleanup(func() { c.Close() })
	return c
}

// proxy forwards every connection it accepts to the master's address and
// counts the calls of one method clients make through it since it last
// changed address (net/rpc's gob requests carry "Service.Method" as it
// is).
type proxy struct {
	ln     net.Listener
	method []byte
	calls  atomic.Int64
	wg     sync.WaitGroup // the accept loop and the copies

	mu     sync.Mutex
	target string
	conns  []net.Conn // both ends of every connection forwarded
}

func startProxy(t *testing.T, target, method string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, method: []byte(method), target: target}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() {
		ln.Close()
		p.drop()
		p.wg.Wait()
	})
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

// redirect forwards the connections accepted from now on to target, drops
// those open and counts the calls afresh.
func (p *proxy) redirect(target string) {
	p.mu.Lock()
	p.target = target
	p.mu.Unlock()
	p.drop()
	p.calls.Store(0)
}

// drop closes every connection forwarded so far.
func (p *proxy) drop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		m, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			c.Close() // as a master that is down
			continue
		}
		p.conns = append(p.conns, c, m)
		p.mu.Unlock()
		p.wg.Add(2)
		go p.copy(m, &counter{conn: c, p: p}, c, m)
		go p.copy(c, m, c, m)
	}
}

// copy copies src to dst until either end fails, then closes both.
func (p *proxy) copy(dst io.Writer, src io.Reader, ends ...net.Conn) {
	defer p.wg.Done()
	io.Copy(dst, src)
	for _, c := range ends {
		c.Close()
	}
}

// counter reads what a client sends, counting the proxy's method's name
// in it, a name cut between two reads included.
type counter struct {
	conn net.Conn
	p    *proxy
	tail []byte // the end of what was read, shorter than the name
}

func (c *counter) Read(b []byte) (int, error) {
	n, err := c.conn.Read(b)
	seen := append(c.tail, b[:n]...)
	c.p.calls.Add(int64(bytes.Count(seen, c.p.method)))
	c.tail = slices.Clone(seen[max(len(seen)-len(c.p.method)+1, 0):])
	return n, err
}
