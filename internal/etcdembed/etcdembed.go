// Package etcdembed runs one etcd member inside the current process. It is
// the store of the master's default mode, the body of cmd/etcd-embed, and
// the etcd of tests (see package etcdtest).
//
// What it promises:
//
//   - Start returns only once the member is ready to serve clients (it has
//     joined a cluster with a quorum and a leader), or returns an error after
//     having released what it took: listeners, the data directory, etcd's
//     goroutines. (Should etcd's own start still be blocked when the wait
//     ends, e.g. joining unreachable peers, it is released in the background
//     once it returns.) Errors past configuration checks name the member,
//     the data directory and both addresses.
//   - By default the member listens on, and advertises, loopback addresses
//     only (127.0.0.1). Addresses with port 0 are resolved to free ports
//     before etcd is configured, so the peer URL etcd advertises is exactly
//     the one in the initial cluster, and Endpoints reports real ports.
//     An address that listens on every interface (0.0.0.0, ::) is advertised
//     as 127.0.0.1: this package never advertises an external IP on its own;
//     name it explicitly in the address or in InitialCluster.
//   - The data directory is locked (flock) while the member runs, so a second
//     member on the same directory fails at once with a clear error instead
//     of hanging on etcd's database lock. On a platform without flock there
//     is no such check.
//   - Close is graceful, may be called any number of times and from several
//     goroutines; every call returns after the member has stopped.
//   - Err reports the member's fatal errors while it runs, including the
//     server stopping on its own (for example after it was removed from the
//     cluster).
//   - etcd logs JSON lines at level error and above to stderr by default;
//     the error lines embed writes on every normal shutdown are dropped.
//
// Client traffic can use TLS (https client URLs, optionally requiring client
// certificates); peer traffic is always plain http.
package etcdembed

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/pkg/errors"
	"go.etcd.io/etcd/server/v3/embed"
)

// Server is a running member.
type Server struct {
	e         *embed.Etcd
	cfg       Config // with defaults and resolved addresses
	endpoints []string
	peerURL   string
	unlock    func()
	stopping  *atomic.Bool

	closeOnce sync.Once
	closing   chan struct{} // closed when Close begins
	watchDone chan struct{} // closed when the error watcher returned
	errc      chan error    // buffered 1, never closed
}

// Start starts a member and waits until it is ready to serve, until ctx ends
// or until cfg.ReadyTimeout has passed. A member of a new multi-member
// cluster is ready only once a quorum of members runs, so start the members
// of a cluster concurrently. On failure Start releases everything it took
// and returns an error that names the data directory and the addresses.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	// With automatic ports and nobody else knowing them, a port taken between
	// our probe and etcd's listen is worth another try.
	retry := portIsAuto(cfg.ClientAddr) && portIsAuto(cfg.PeerAddr) && cfg.InitialCluster == ""
	for attempt := 1; ; attempt++ {
		r, err := c.resolve()
		if err != nil {
			return nil, err
		}
		s, err := start(ctx, r)
		if err == nil {
			return s, nil
		}
		if !retry || attempt == 3 || !errors.Is(err, syscall.EADDRINUSE) || ctx.Err() != nil {
			return nil, err
		}
	}
}

// closeEtcd closes e, also when it never became ready: embed's Close waits
// for the client servers, which start only once the member is ready or
// stopping, so an unready member is stopped first.
func closeEtcd(e *embed.Etcd, stopping *atomic.Bool) {
	stopping.Store(true)
	select {
	case <-e.Server.ReadyNotify():
	default:
		e.Server.HardStop()
	}
	e.Close()
}

func start(ctx context.Context, r resolved) (*Server, error) {
	fail := func(err error) error { return errors.WithMessagef(err, "etcdembed: start %s", r.describe()) }
	if err := os.MkdirAll(r.Dir, 0o700); err != nil {
		return nil, fail(err)
	}
	unlock, err := lockDir(r.Dir)
	if err != nil {
		return nil, fail(err)
	}

	stopping := new(atomic.Bool)
	ec, err := r.embedConfig(stopping)
	if err != nil {
		unlock()
		return nil, fail(err)
	}

	ctx, cancel := context.WithTimeout(ctx, r.ReadyTimeout)
	defer cancel()

	// StartEtcd itself can block (opening the database, contacting peers
	// when joining), so it runs apart and ctx is honoured meanwhile.
	type result struct {
		e   *embed.Etcd
		err error
	}
	started := make(chan result, 1)
	go func() {
		e, err := embed.StartEtcd(ec)
		started <- result{e, err}
	}()
	var e *embed.Etcd
	select {
	case res := <-started:
		if res.err != nil {
			unlock()
			return nil, fail(res.err)
		}
		e = res.e
	case <-ctx.Done():
		go func() { // clean up whenever StartEtcd gives up or succeeds
			if res := <-started; res.err == nil {
				closeEtcd(res.e, stopping)
			}
			unlock()
		}()
		return nil, fail(errors.WithMessagef(context.Cause(ctx), "not started after %v", r.ReadyTimeout))
	}

	abort := func(err error) (*Server, error) {
		closeEtcd(e, stopping)
		unlock()
		return nil, fail(err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		return abort(err)
	case <-e.Server.StopNotify():
		return abort(errors.New("the server stopped before it was ready"))
	case <-ctx.Done():
		return abort(errors.WithMessagef(context.Cause(ctx), "not ready after %v (is a quorum of the initial cluster running?)", r.ReadyTimeout))
	}

	s := &Server{
		e:         e,
		cfg:       r.Config,
		peerURL:   r.advertisePeer[0].String(),
		unlock:    unlock,
		stopping:  stopping,
		closing:   make(chan struct{}),
		watchDone: make(chan struct{}),
		errc:      make(chan error, 1),
	}
	for _, l := range e.Clients {
		s.endpoints = append(s.endpoints, endpointURL(r.listenClient.Scheme, l.Addr()))
	}
	go s.watch(r.describe())
	return s, nil
}

// endpointURL is the URL a client dials for a listener: an unspecified
// listening IP is reached through 127.0.0.1.
func endpointURL(scheme string, a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return scheme + "://" + a.String()
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}

// watch forwards the first fatal error of the running member to errc.
func (s *Server) watch(desc string) {
	defer close(s.watchDone)
	var err error
	select {
	case <-s.closing:
		return
	case e, ok := <-s.e.Err():
		if !ok {
			return
		}
		err = e
	case <-s.e.Server.StopNotify():
		err = errors.New("the server stopped on its own (removed from the cluster? see etcd's log)")
	}
	select {
	case <-s.closing: // Close caused it
		return
	default:
	}
	s.errc <- errors.WithMessagef(err, "etcdembed: %s", desc)
}

// Endpoints returns the client URLs the member listens on, such as
// "http://127.0.0.1:40123" ("https://..." with TLS).
func (s *Server) Endpoints() []string { return append([]string(nil), s.endpoints...) }

// PeerURL returns the peer URL the member advertises, as in InitialCluster.
func (s *Server) PeerURL() string { return s.peerURL }

// Name returns the member's name.
func (s *Server) Name() string { return s.cfg.Name }

// Config returns the member's configuration with defaults filled in and
// ports resolved.
func (s *Server) Config() Config { return s.cfg }

// Etcd returns the embedded etcd, for what this package does not cover,
// e.g. Etcd().Server.HardStop() in a test that simulates a crash (call
// Close afterwards all the same).
func (s *Server) Etcd() *embed.Etcd { return s.e }

// Err receives at most one error: a fatal error of the member's listeners,
// or the server stopping on its own (e.g. after being removed from the
// cluster). An error caused by Close is not reported, and nothing is sent
// after Close has returned; the channel is never closed.
func (s *Server) Err() <-chan error { return s.errc }

// Close stops the member gracefully and releases its data directory.
// It may be called more than once, also concurrently; every call returns
// once the member has stopped. Note that a graceful stop lets open client
// streams (watches, lease keepalives) run for up to several seconds: to
// simulate a crash, kill a separate process (cmd/etcd-embed) instead.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		close(s.closing)
		closeEtcd(s.e, s.stopping)
		<-s.watchDone
		s.unlock()
	})
}

// String describes the member for logs.
func (s *Server) String() string {
	return fmt.Sprintf("etcd member %q (data dir %s, clients %s, peer %s)",
		s.cfg.Name, s.cfg.Dir, strings.Join(s.endpoints, ","), s.peerURL)
}
