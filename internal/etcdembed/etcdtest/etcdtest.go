// Package etcdtest starts embedded etcd members for tests of other packages.
//
// Every member runs in its own t.TempDir() with fsync off and the cheapest
// password hashing, and listens on free loopback ports only; members and
// clients are closed in t.Cleanup. Clients
// made here log nothing (etcd's client retries are noisy while a test breaks
// things on purpose).
package etcdtest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/trainmaster/master/internal/etcdembed"
)

// DialTimeout is the DialTimeout of the clients made here.
const DialTimeout = 5 * time.Second

// Option changes how Start, StartCluster and NewClient work.
type Option func(*options)

type options struct {
	certs *Certs
	edits []func(*etcdembed.Config)
}

func collect(opts []Option) options {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// WithTLS serves clients over TLS with certs (see GenerateCerts), requiring
// client certificates, and makes the clients of this package use
// ClientTLS(certs).
func WithTLS(certs Certs) Option {
	return func(o *options) { o.certs = &certs }
}

// WithConfig edits the member configuration after this package filled it in
// (Name, Dir, UnsafeNoFsync, TLS, and for clusters the addresses and
// InitialCluster).
func WithConfig(edit func(*etcdembed.Config)) Option {
	return func(o *options) { o.edits = append(o.edits, edit) }
}

func (o options) config(t testing.TB) etcdembed.Config {
	cfg := etcdembed.Config{
		Dir:           t.TempDir(),
		UnsafeNoFsync: true,
		ReadyTimeout:  30 * time.Second,
		// The cheapest password hashing (bcrypt.MinCost) keeps auth tests
		// fast; etcd's default costs ~0.7 s per login under -race.
		Embed: func(ec *embed.Config) { ec.BcryptCost = 4 },
	}
	if o.certs != nil {
		cfg.TLS = &etcdembed.TLSConfig{
			CertFile:       o.certs.ServerCert,
			KeyFile:        o.certs.ServerKey,
			TrustedCAFile:  o.certs.CAFile,
			ClientCertAuth: true,
		}
	}
	return cfg
}

func (o options) apply(cfg *etcdembed.Config) {
	for _, edit := range o.edits {
		edit(cfg)
	}
}

// Start starts a single member and a client connected to it; both are
// closed in t.Cleanup.
func Start(t testing.TB, opts ...Option) (*etcdembed.Server, *clientv3.Client) {
	t.Helper()
	o := collect(opts)
	cfg := o.config(t)
	o.apply(&cfg)
	srv, err := etcdembed.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv, NewClient(t, srv.Endpoints(), opts...)
}

// StartCluster starts an n-member cluster in this process (the members
// start concurrently, as each waits for a quorum) and a client connected to
// all of them; all are closed in t.Cleanup. Members are named m0, m1, ...
func StartCluster(t testing.TB, n int, opts ...Option) ([]*etcdembed.Server, *clientv3.Client) {
	t.Helper()
	o := collect(opts)
	cfgs := make([]etcdembed.Config, n)
	var cluster string
	for i := range cfgs {
		peer, err := etcdembed.FreeLoopbackAddr()
		if err != nil {
			t.Fatal(err)
		}
		cfg := o.config(t)
		cfg.Name = fmt.Sprintf("m%d", i)
		cfg.PeerAddr = peer
		if i > 0 {
			cluster += ","
		}
		cluster += cfg.Name + "=http://" + peer
		cfgs[i] = cfg
	}
	srvs := make([]*etcdembed.Server, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range cfgs {
		cfgs[i].InitialCluster = cluster
		o.apply(&cfgs[i])
		wg.Add(1)
		go func() {
			defer wg.Done()
			srvs[i], errs[i] = etcdembed.Start(context.Background(), cfgs[i])
		}()
	}
	wg.Wait()
	var endpoints []string
	for i, srv := range srvs {
		if srv != nil {
			// A member's graceful stop waits up to a second for the
			// peer connections of members still running.
			t.Cleanup(srv.Close)
			endpoints = append(endpoints, srv.Endpoints()...)
		}
		if errs[i] != nil {
			t.Error(errs[i])
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	return srvs, NewClient(t, endpoints, opts...)
}

// NewClient connects a client to endpoints, with ClientTLS when WithTLS is
// among opts, and closes it in t.Cleanup. WithConfig options are ignored.
func NewClient(t testing.TB, endpoints []string, opts ...Option) *clientv3.Client {
	t.Helper()
	return NewClientConfig(t, ClientConfig(t, endpoints, opts...))
}

// ClientConfig is the client configuration NewClient uses, for tests that
// want to change it (e.g. set Username and Password).
func ClientConfig(t testing.TB, endpoints []string, opts ...Option) clientv3.Config {
	t.Helper()
	o := collect(opts)
	cfg := clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: DialTimeout,
		Logger:      zap.NewNop(),
	}
	if o.certs != nil {
		cfg.TLS = ClientTLS(t, *o.certs)
	}
	return cfg
}

// NewClientConfig connects a client with cfg and closes it in t.Cleanup.
func NewClientConfig(t testing.TB, cfg clientv3.Config) *clientv3.Client {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	cli, err := clientv3.New(cfg)
	if err != nil {
		t.Fatalf("etcd client for %v: %v", cfg.Endpoints, err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// EnableAuth turns on etcd authentication through cli, which must still be
// allowed to change it (auth off, or cli logged in as root). It creates:
//
//   - user "root" with password, granted the built-in role "root" (etcd
//     refuses to enable auth without it);
//   - unless user is "root": role "readwrite" with read-write permission on
//     every key, and user with password, granted that role.
//
// Afterwards cli, if it has no credentials, is refused like any client
// without them; connect with Username and Password (see ClientConfig).
// Users and roles are not admins: only root may change auth again.
func EnableAuth(t testing.TB, cli *clientv3.Client, user, password string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	check := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("etcd auth: %s: %v", what, err)
		}
	}
	_, err := cli.UserAdd(ctx, "root", password)
	check("add user root", err)
	_, err = cli.UserGrantRole(ctx, "root", "root")
	check("grant role root to root", err)
	if user != "root" {
		_, err = cli.RoleAdd(ctx, "readwrite")
		check("add role readwrite", err)
		// Key "\x00" with range end "\x00" is every key from "\x00" on: all.
		_, err = cli.RoleGrantPermission(ctx, "readwrite", "\x00", "\x00", clientv3.PermissionType(clientv3.PermReadWrite))
		check("grant readwrite on all keys", err)
		_, err = cli.UserAdd(ctx, user, password)
		check("add user "+user, err)
		_, err = cli.UserGrantRole(ctx, user, "readwrite")
		check("grant role readwrite to "+user, err)
	}
	_, err = cli.AuthEnable(ctx)
	check("enable", err)
}
