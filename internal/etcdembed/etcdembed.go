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
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/pkg/errors"
	"go.etcd.io/etcd/client/pkg/v3/logutil"
	"go.etcd.io/etcd/client/pkg/v3/types"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Defaults of Config.
const (
	DefaultName         = "default"
	DefaultClientAddr   = "127.0.0.1:0"
	DefaultPeerAddr     = "127.0.0.1:0"
	DefaultClusterToken = "trainmaster"
	DefaultLogLevel     = "error"
	DefaultReadyTimeout = 60 * time.Second
)

// Cluster states of Config.ClusterState.
const (
	ClusterStateNew      = embed.ClusterStateFlagNew      // "new": bootstrap a new cluster
	ClusterStateExisting = embed.ClusterStateFlagExisting // "existing": join a running cluster (after a MemberAdd)
)

// TLSConfig is the transport security of client traffic.
type TLSConfig struct {
	CertFile      string // server certificate (PEM); it should also allow client auth, see below
	KeyFile       string // its key (PEM)
	TrustedCAFile string // CA that signs client certificates (PEM)
	// ClientCertAuth requires clients to present a certificate signed by
	// TrustedCAFile. etcd's own gRPC gateway then dials the member with
	// CertFile as its client certificate, so CertFile should carry the
	// client-auth extended key usage too. With etcd auth enabled, the common
	// name of a client certificate is taken as the user name.
	ClientCertAuth bool
}

// Config configures one member. Only Dir is required.
type Config struct {
	Name string // member name; default "default"
	Dir  string // data directory (required); created with mode 0700 if missing

	// ClientAddr is the host:port clients connect to; default "127.0.0.1:0",
	// a free loopback port. An empty host means 127.0.0.1.
	ClientAddr string
	// PeerAddr is the host:port other members connect to. When it is empty
	// or has port 0 and InitialCluster names this member, the member listens
	// on the address of its InitialCluster entry; otherwise the default is
	// "127.0.0.1:0", a free loopback port. An empty host means 127.0.0.1.
	PeerAddr string
	// InitialCluster is "name=http://host:port,..." with an entry for this
	// member; the member advertises its entry as its peer URL. Default: this
	// member alone. It only matters for a data directory without data: a
	// member with data rejoins the cluster recorded there.
	InitialCluster string
	ClusterState   string // "new" (default) or "existing"
	ClusterToken   string // default "trainmaster"

	UnsafeNoFsync bool // tests only: skip fsync, which loses data on a machine crash

	QuotaBackendBytes int64 // 0 = etcd's default (2 GiB)
	MaxRequestBytes   uint  // 0 = etcd's default (1.5 MiB)
	// AutoCompactionRetention keeps this much history: a number of revisions
	// with mode "revision" (e.g. "1000"), a duration with mode "periodic"
	// (e.g. "1h", a bare number means hours). "" or "0" = no auto-compaction.
	AutoCompactionRetention string
	AutoCompactionMode      string // "revision" or "periodic" (default periodic, as in etcd)

	TLS *TLSConfig // client TLS; nil = plain http

	LogLevel string // etcd's zap level (debug, info, warn, error, dpanic, panic, fatal); default "error"
	// LogOutputs are where etcd logs JSON lines: "stderr", "stdout",
	// "default" (stderr) or file paths. Default stderr.
	LogOutputs []string
	// Logger, if set, is etcd's logger instead of one made from LogLevel
	// and LogOutputs.
	Logger *zap.Logger

	ReadyTimeout time.Duration // how long Start waits for the member to be ready; default 60s

	// Embed, if set, has the last word on etcd's own configuration, for
	// what Config lacks (e.g. BcryptCost, TickMs, ElectionMs). Leave the
	// addresses, Dir and InitialCluster alone.
	Embed func(*embed.Config)
}

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

// FreeLoopbackAddr returns "127.0.0.1:port" with a port that was free a
// moment ago. Use it to build an InitialCluster before starting its members.
func FreeLoopbackAddr() (string, error) {
	return freeAddr("127.0.0.1")
}

func freeAddr(host string) (string, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return "", errors.WithMessagef(err, "find a free port on %s", host)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		return "", err
	}
	return addr, nil
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

func portIsAuto(addr string) bool {
	if addr == "" {
		return true
	}
	_, port, err := net.SplitHostPort(addr)
	return err == nil && (port == "" || port == "0")
}

// withDefaults fills in defaults and checks what can be checked before any
// port is taken.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.Dir == "" {
		return cfg, errors.New("etcdembed: Config.Dir (data directory) is required")
	}
	if cfg.Name == "" {
		cfg.Name = DefaultName
	}
	if cfg.ClientAddr == "" {
		cfg.ClientAddr = DefaultClientAddr
	}
	if cfg.ClusterState == "" {
		cfg.ClusterState = ClusterStateNew
	}
	if cfg.ClusterState != ClusterStateNew && cfg.ClusterState != ClusterStateExisting {
		return cfg, errors.Errorf("etcdembed: ClusterState %q: want %q or %q", cfg.ClusterState, ClusterStateNew, ClusterStateExisting)
	}
	if cfg.ClusterToken == "" {
		cfg.ClusterToken = DefaultClusterToken
	}
	if cfg.LogLevel == "" {
		cfg.LogLevel = DefaultLogLevel
	}
	var lvl zapcore.Level
	if err := lvl.Set(cfg.LogLevel); err != nil {
		return cfg, errors.WithMessage(err, "etcdembed: LogLevel")
	}
	if cfg.ReadyTimeout <= 0 {
		cfg.ReadyTimeout = DefaultReadyTimeout
	}
	if cfg.AutoCompactionMode == "" {
		cfg.AutoCompactionMode = embed.DefaultAutoCompactionMode
	}
	if cfg.AutoCompactionRetention == "" {
		cfg.AutoCompactionRetention = "0"
	}
	if cfg.TLS != nil && (cfg.TLS.CertFile == "" || cfg.TLS.KeyFile == "") {
		return cfg, errors.New("etcdembed: TLS needs CertFile and KeyFile")
	}
	if cfg.TLS != nil && cfg.TLS.ClientCertAuth && cfg.TLS.TrustedCAFile == "" {
		return cfg, errors.New("etcdembed: TLS.ClientCertAuth needs TrustedCAFile")
	}
	return cfg, nil
}

// resolved is a Config with real ports and the URLs derived from them.
type resolved struct {
	Config
	listenClient, advertiseClient url.URL
	listenPeer                    url.URL
	advertisePeer                 []url.URL
}

// resolve picks free ports for port-0 addresses and derives the URLs.
func (cfg Config) resolve() (resolved, error) {
	r := resolved{Config: cfg}
	scheme := "http"
	if cfg.TLS != nil {
		scheme = "https"
	}
	listen, advertise, err := resolveAddr(cfg.ClientAddr)
	if err != nil {
		return r, errors.WithMessagef(err, "etcdembed: ClientAddr %q", cfg.ClientAddr)
	}
	r.ClientAddr = listen
	r.listenClient = url.URL{Scheme: scheme, Host: listen}
	r.advertiseClient = url.URL{Scheme: scheme, Host: advertise}

	if cfg.InitialCluster == "" {
		peer := cfg.PeerAddr
		if peer == "" {
			peer = DefaultPeerAddr
		}
		listen, advertise, err := resolveAddr(peer)
		if err != nil {
			return r, errors.WithMessagef(err, "etcdembed: PeerAddr %q", peer)
		}
		r.PeerAddr = listen
		r.listenPeer = url.URL{Scheme: "http", Host: listen}
		r.advertisePeer = []url.URL{{Scheme: "http", Host: advertise}}
		r.InitialCluster = cfg.Name + "=" + r.advertisePeer[0].String()
		return r, nil
	}

	m, err := types.NewURLsMap(cfg.InitialCluster)
	if err != nil {
		return r, errors.WithMessagef(err, "etcdembed: InitialCluster %q", cfg.InitialCluster)
	}
	mine := m[cfg.Name]
	if len(mine) == 0 {
		return r, errors.Errorf("etcdembed: InitialCluster %q has no entry for member %q", cfg.InitialCluster, cfg.Name)
	}
	for _, u := range mine {
		if u.Scheme != "http" {
			return r, errors.Errorf("etcdembed: InitialCluster entry %s of member %q: peer URLs must be http", u.String(), cfg.Name)
		}
	}
	r.advertisePeer = mine
	peer := cfg.PeerAddr
	if portIsAuto(peer) {
		peer = mine[0].Host
	}
	listen, _, err = resolveAddr(peer)
	if err != nil {
		return r, errors.WithMessagef(err, "etcdembed: PeerAddr %q", peer)
	}
	r.PeerAddr = listen
	r.listenPeer = url.URL{Scheme: "http", Host: listen}
	return r, nil
}

// resolveAddr returns the address to listen on and the one to advertise for
// a host:port: an empty host becomes 127.0.0.1, port 0 a free port, and an
// unspecified IP (0.0.0.0, ::) is advertised as 127.0.0.1.
func resolveAddr(addr string) (listen, advertise string, err error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", "", err
	}
	if host == "" {
		host = "127.0.0.1"
	}
	if port == "" || port == "0" {
		free, err := freeAddr(host)
		if err != nil {
			return "", "", err
		}
		if _, port, err = net.SplitHostPort(free); err != nil {
			return "", "", err
		}
	} else if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return "", "", errors.Errorf("bad port %q", port)
	}
	listen = net.JoinHostPort(host, port)
	advertise = listen
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		advertise = net.JoinHostPort("127.0.0.1", port)
	}
	return listen, advertise, nil
}

func (r resolved) describe() string {
	return fmt.Sprintf("etcd member %q (data dir %s, client %s, peer %s)",
		r.Name, r.Dir, r.listenClient.String(), r.listenPeer.String())
}

func (r resolved) embedConfig(stopping *atomic.Bool) (*embed.Config, error) {
	ec := embed.NewConfig()
	ec.Name = r.Name
	ec.Dir = r.Dir
	ec.ListenClientUrls = []url.URL{r.listenClient}
	ec.AdvertiseClientUrls = []url.URL{r.advertiseClient}
	ec.ListenPeerUrls = []url.URL{r.listenPeer}
	ec.AdvertisePeerUrls = r.advertisePeer
	ec.InitialCluster = r.InitialCluster
	ec.ClusterState = r.ClusterState
	ec.InitialClusterToken = r.ClusterToken
	ec.UnsafeNoFsync = r.UnsafeNoFsync
	if r.QuotaBackendBytes > 0 {
		ec.QuotaBackendBytes = r.QuotaBackendBytes
	}
	if r.MaxRequestBytes > 0 {
		ec.MaxRequestBytes = r.MaxRequestBytes
	}
	ec.AutoCompactionMode = r.AutoCompactionMode
	ec.AutoCompactionRetention = r.AutoCompactionRetention
	if r.TLS != nil {
		ec.ClientTLSInfo.CertFile = r.TLS.CertFile
		ec.ClientTLSInfo.KeyFile = r.TLS.KeyFile
		ec.ClientTLSInfo.TrustedCAFile = r.TLS.TrustedCAFile
		ec.ClientTLSInfo.ClientCertAuth = r.TLS.ClientCertAuth
	}
	ec.LogLevel = r.LogLevel
	lg := r.Logger
	if lg == nil {
		lc := logutil.DefaultZapLoggerConfig
		lc.Level = zap.NewAtomicLevelAt(logutil.ConvertToZapLevel(r.LogLevel))
		lc.OutputPaths = nil
		for _, out := range r.LogOutputs {
			if out == embed.DefaultLogOutput {
				out = embed.StdErrLogOutput
			}
			lc.OutputPaths = append(lc.OutputPaths, out)
		}
		if len(lc.OutputPaths) == 0 {
			lc.OutputPaths = []string{embed.StdErrLogOutput}
		}
		lc.ErrorOutputPaths = lc.OutputPaths
		var err error
		if lg, err = lc.Build(); err != nil {
			return nil, errors.WithMessage(err, "etcd logger")
		}
	}
	lg = lg.WithOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core {
		return quietStop{c, stopping}
	}))
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(lg)
	if r.Embed != nil {
		r.Embed(ec)
	}
	return ec, nil
}

// msgServeFailed is what embed logs at level error when a listener stops
// serving, even when that is because the member is being closed.
const msgServeFailed = "setting up serving from embedded etcd failed."

// quietStop drops msgServeFailed once the member is being stopped, so that a
// normal Close logs nothing at level error.
type quietStop struct {
	zapcore.Core
	stopping *atomic.Bool
}

func (q quietStop) With(fields []zapcore.Field) zapcore.Core {
	return quietStop{q.Core.With(fields), q.stopping}
}

func (q quietStop) Check(ent zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if ent.Message == msgServeFailed && q.stopping.Load() {
		return ce
	}
	return q.Core.Check(ent, ce)
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
