// Package leader runs the master service while this process holds the
// master lock in etcd, and waits as a standby otherwise.
//
// A term goes: open a session (a lease of Config.TTL seconds), campaign,
// and once elected: listen, publish the address (attached to the lease,
// fenced), load the queues from etcd and serve. The term ends when a fenced
// write is rejected, when the session ends, or when the context ends; the
// listener is closed and the state dropped at once, and, unless the context
// ended, a new term starts as a standby. A standby starts no RPC service.
// When the context ends the leader resigns by revoking its lease, so a
// standby takes over in milliseconds rather than after the TTL; so it does
// when the trainer port fails for good (an accept error that does not pass
// by itself): a master that cannot take connections must not keep the lock
// and its published address.
package leader

import (
	"context"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/pkg/errors"
	"github.com/sirupsen/logrus"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/trainmaster/master/go/discovery"
	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/election"
	"github.com/trainmaster/master/internal/etcdembed"
	"github.com/trainmaster/master/internal/etcdstore"
	"github.com/trainmaster/master/internal/master"
	"github.com/trainmaster/master/internal/ratelog"
	"github.com/trainmaster/master/internal/taskqueue"
	"github.com/trainmaster/master/internal/trainerport"
)

// Config configures Run.
type Config struct {
	Client    *clientv3.Client
	Namespace string
	TTL       int    // session TTL in seconds; default 5
	Addr      string // listen address while leading
	Advertise string // address published for trainers; default derived from Addr
	Service   master.Config
	Log       logrus.FieldLogger
	// Serving, if set, is called with the published address each time this
	// process starts serving.
	Serving func(addr string)
	// Stats, if set, receives the counters of each term's stores.
	Stats func(*etcdstore.Stats)
	// Server configures the trainer port: its limits, TLS and token (its
	// Log is replaced by Log).
	Server trainerport.Config
	// Listen, if set, opens the trainer port instead of net.Listen("tcp",
	// addr): for listeners handed over by a supervisor, and for tests.
	Listen func(addr string) (net.Listener, error)
	// Candidate is what this process writes in its lock key (who it is,
	// where its status page is); default discovery.ThisProcess("").
	Candidate *discovery.Candidate
	// Term, if set, is run in a goroutine of its own once a term serves,
	// with the term's context and service (for the status page and the
	// metrics): it returns once that context ends, and the term waits for
	// it before it ends.
	Term func(ctx context.Context, svc *master.Service)
}

// ErrRefused wraps errors that no new term can fix, such as a stored state
// this master cannot read: Run returns them instead of campaigning again.
var ErrRefused = errors.New("leader: refusing to serve")

// Run campaigns and serves, term after term, until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	if cfg.TTL == 0 {
		cfg.TTL = 5
	}
	if cfg.Log == nil {
		cfg.Log = logrus.StandardLogger()
	}
	for {
		err := term(ctx, cfg)
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, ErrRefused):
			return err
		}
		cfg.Log.WithError(err).Warn("term ended; standing by again")
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func term(ctx context.Context, cfg Config) error {
	session, err := concurrency.NewSession(cfg.Client, concurrency.WithTTL(cfg.TTL), concurrency.WithContext(ctx))
	if err != nil {
		return errors.Wrap(err, "leader: open session")
	}
	defer session.Close()
	cfg.Log.WithField("lease", fmt.Sprintf("%x", session.Lease())).Info("standing by: campaigning for the master lock")
	candidate := discovery.ThisProcess("")
	if cfg.Candidate != nil {
		candidate = *cfg.Candidate
	}
	lead, err := election.Campaign(ctx, session, discovery.LockPrefix(cfg.Namespace), candidate.Value())
	if err != nil {
		return err
	}
	lis, err := listen(cfg)
	if err != nil {
		return wire.WithKind(ErrRefused, errors.Errorf("listen on %s: %v", cfg.Addr, err))
	}
	defer lis.Close()
	addr := Advertised(cfg.Advertise, cfg.Addr, lis.Addr())
	if err := publish(ctx, cfg, lead, addr); err != nil {
		return err
	}
	catalog := etcdstore.NewCatalog(etcdstore.Config{Client: cfg.Client, Namespace: cfg.Namespace, Fence: lead.Fence(), Log: cfg.Log,
		MaxTxnOps: maxTxnOps(ctx, cfg)})
	if cfg.Stats != nil {
		cfg.Stats(catalog.Stats())
	}
	return serve(ctx, cfg, lead, lis, addr, catalog)
}

// maxTxnOps is the --max-txn-ops of the job's etcd (etcdstore.Config),
// learnt at each term: its commits take up to that many entries of what
// waits. A failed probe leaves etcd's default, with a warning.
func maxTxnOps(ctx context.Context, cfg Config) int {
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	n, err := etcdstore.DetectMaxTxnOps(pctx, cfg.Client, discovery.LockPrefix(cfg.Namespace))
	log := cfg.Log.WithField("max_txn_ops", n)
	switch {
	case err != nil:
		log.WithError(err).Warnf("could not learn etcd's --max-txn-ops: committing at most %d operations at once, its default", etcdstore.DefaultMaxTxnOps)
		return etcdstore.DefaultMaxTxnOps
	case n <= etcdstore.DefaultMaxTxnOps:
		log.Warnf("etcd takes transactions of at most %d operations (--max-txn-ops): each commit writes at most %d task entries, and thousands of trainers may wait on the commits; raise it (etcd-embed's default is %d)", n, etcdstore.EntriesPerTxn(n), etcdembed.DefaultMaxTxnOps)
	default:
		log.Infof("etcd takes transactions of %d operations (--max-txn-ops): each commit writes up to that many task entries of what waits", n)
	}
	return n
}

// serve runs the service on lis until the term ends: the service runs
// under the leadership's context (election.Leadership.Context), and its Run
// returns once that context ends or a fenced write was rejected.
func serve(ctx context.Context, cfg Config, lead *election.Leadership, lis net.Listener, addr string, catalog *etcdstore.Catalog) error {
	leading, stop := lead.Context(ctx)
	defer stop()
	scfg := cfg.Service
	scfg.Catalog, scfg.Checkpoints, scfg.Rendezvous, scfg.Log = catalog, catalog, catalog, cfg.Log
	svc, err := master.New(scfg)
	if err != nil {
		return wire.WithKind(ErrRefused, errors.New(err.Error()))
	}
	defer svc.Close()
	if err := svc.Restore(leading); err != nil {
		if unservable(err) {
			return wire.WithKind(ErrRefused, err)
		}
		return err
	}
	srvCfg := cfg.Server
	srvCfg.Log = cfg.Log
	srv, err := newPort(svc, srvCfg)
	if err != nil {
		return wire.WithKind(ErrRefused, errors.New(err.Error()))
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	defer srv.Close()
	cfg.Log.WithFields(logrus.Fields{"addr": addr, "key": lead.Key, "rev": lead.Rev}).Info("leading: serving trainers")
	if cfg.Term != nil {
		termDone := make(chan struct{})
		go func() {
			defer close(termDone)
			cfg.Term(leading, svc)
		}()
		defer func() {
			stop()
			<-termDone
		}()
	}
	if cfg.Serving != nil {
		cfg.Serving(addr)
	}
	ran := make(chan error, 1)
	go func() { ran <- svc.Run(leading) }()
	select {
	case err := <-served:
		return portFailed(cfg, lead, srv, err)
	case err := <-ran:
		if ctx.Err() == nil {
			return err // the session ended, or a fenced write was rejected
		}
		srv.Close()
		resign(cfg, lead)
		return nil
	}
}

// unservable reports whether a Restore error is one that no new term can
// fix: a stored state this master cannot read or trust, or a declared
// dataset it cannot serve.
func unservable(err error) bool {
	return errors.Is(err, etcdstore.ErrFormat) || errors.Is(err, taskqueue.ErrBadEntry) || errors.Is(err, master.ErrDeclaredDataset)
}

// portFailed ends a term whose trainer port stopped accepting: no trainer
// can reach this master any more, so it resigns at once for a standby to
// serve, rather than hold the lock and its published address.
func portFailed(cfg Config, lead *election.Leadership, srv *trainerport.Server, err error) error {
	if err == nil {
		err = errors.New("the listener was closed")
	}
	cfg.Log.WithError(err).Error("the trainer port failed: ending the term and resigning the master lock so that a standby serves")
	srv.Close()
	resign(cfg, lead)
	return errors.Wrap(err, "leader: trainer port")
}

// newPort returns the trainer port of a term, serving svc.
func newPort(svc *master.Service, cfg trainerport.Config) (*trainerport.Server, error) {
	if cfg.Warnings == nil {
		cfg.Warnings = ratelog.New(ratelog.Interval, time.Now)
	}
	srv, err := trainerport.NewServer(cfg)
	if err != nil {
		return nil, err
	}
	if err := srv.Register(wire.ServiceName, master.NewReceiver(svc), master.NewConnections(svc)); err != nil {
		return nil, err
	}
	if err := srv.Register(wire.RendezvousServiceName, master.NewRendezvousReceiver(svc), nil); err != nil {
		return nil, err
	}
	return srv, nil
}

// resign gives up the lock by revoking the lease, within 2 seconds, so that
// a standby takes over at once instead of after the TTL.
func resign(cfg Config, lead *election.Leadership) {
	rctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := lead.Resign(rctx); err != nil {
		cfg.Log.WithError(err).Warn("could not resign; a standby takes over after the TTL")
		return
	}
	cfg.Log.Info("resigned the master lock")
}

func listen(cfg Config) (net.Listener, error) {
	if cfg.Listen != nil {
		return cfg.Listen(cfg.Addr)
	}
	return net.Listen("tcp", cfg.Addr)
}

// publish writes the address trainers dial, fenced and attached to the lease.
func publish(ctx context.Context, cfg Config, lead *election.Leadership, addr string) error {
	resp, err := cfg.Client.Txn(ctx).If(lead.Fence()).
		Then(clientv3.OpPut(discovery.AddrKey(cfg.Namespace), addr, clientv3.WithLease(lead.Session.Lease()))).
		Commit()
	if err != nil {
		return errors.Wrap(err, "leader: publish address")
	}
	if !resp.Succeeded {
		return master.ErrLeadershipLost
	}
	return nil
}

// Advertised is the address to publish for a listener bound at bound:
// advertise when given, else the listen address when it names a host, else
// the host name; with the port actually bound.
func Advertised(advertise, listen string, bound net.Addr) string {
	if advertise != "" {
		return advertise
	}
	_, port, _ := net.SplitHostPort(bound.String())
	if host, _, err := net.SplitHostPort(listen); err == nil && host != "" && host != "0.0.0.0" && host != "::" {
		return net.JoinHostPort(host, port)
	}
	return net.JoinHostPort(hostname(), port)
}

func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return "localhost"
	}
	return h
}
