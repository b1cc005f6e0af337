// Package etcdconn is how every command of the project connects to etcd:
// the same flags (endpoints, dial timeout, TLS client certificates,
// username and password) and the same check that etcd answers before the
// command goes on.
package etcdconn

import (
	"context"
	"crypto/tls"
	"strings"
	"time"

	"github.com/namsral/flag"
	"github.com/pkg/errors"
	"github.com/sirupsen/logrus"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/trainmaster/master/internal/credfile"
)

// Options are the connection settings.
type Options struct {
	Endpoints   []string
	DialTimeout time.Duration
	CACert      string // PEM file of the CA that signed etcd's certificate
	Cert, Key   string // PEM files of this client's certificate and key
	User        string
	Password    string // never logged
}

// Register adds the connection flags to fs: -endpoints, -etcd-dial-timeout,
// -etcd-cacert, -etcd-cert, -etcd-key, -etcd-user and -etcd-password (the
// password is better given through the environment than on a command line).
func (o *Options) Register(fs *flag.FlagSet) {
	fs.Var((*endpoints)(&o.Endpoints), "endpoints", "comma-separated etcd `URLs` (http://host:2379,...)")
	fs.DurationVar(&o.DialTimeout, "etcd-dial-timeout", 5*time.Second, "give up when etcd does not answer within this long at start")
	fs.StringVar(&o.CACert, "etcd-cacert", "", "`file` of the CA certificate that signed etcd's (TLS)")
	fs.StringVar(&o.Cert, "etcd-cert", "", "`file` of the client certificate for etcd (TLS)")
	fs.StringVar(&o.Key, "etcd-key", "", "`file` of the client key for etcd (TLS)")
	fs.StringVar(&o.User, "etcd-user", "", "etcd user name")
	fs.StringVar(&o.Password, "etcd-password", "", "etcd password (prefer the environment variable)")
}

// TLS returns the client TLS configuration, or nil when no TLS flag is set.
func (o Options) TLS() (*tls.Config, error) {
	if o.CACert == "" && o.Cert == "" && o.Key == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.CACert != "" {
		pool, err := credfile.CertPool(o.CACert)
		if err != nil {
			return nil, errors.WithMessage(err, "etcd CA certificate")
		}
		cfg.RootCAs = pool
	}
	if o.Cert != "" || o.Key != "" {
		pair, err := tls.LoadX509KeyPair(o.Cert, o.Key)
		if err != nil {
			return nil, errors.Wrapf(err, "etcd client certificate %s and key %s", o.Cert, o.Key)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// Connect opens a client and checks that etcd answers. It tries again
// every second, logging each failure, until DialTimeout has passed; then it
// gives up with an error naming the endpoints.
func (o Options) Connect(ctx context.Context, log logrus.FieldLogger) (*clientv3.Client, error) {
	if len(o.Endpoints) == 0 {
		return nil, errors.New("no etcd endpoints")
	}
	tlsCfg, err := o.TLS()
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(o.DialTimeout)
	for attempt := 1; ; attempt++ {
		// Never a zero or negative wait: clientv3 reads it as "no timeout".
		wait := max(min(time.Second, time.Until(deadline)), 200*time.Millisecond)
		next := time.Now().Add(time.Second) // one attempt a second
		cli, err := o.try(ctx, tlsCfg, wait)
		if err == nil {
			return cli, nil
		}
		if ctx.Err() != nil || !time.Now().Before(deadline) || permanent(err) {
			return nil, o.unreachable(err)
		}
		log.WithFields(logrus.Fields{"endpoints": strings.Join(o.Endpoints, ","), "attempt": attempt,
			"gives_up_in": time.Until(deadline).Round(100 * time.Millisecond)}).WithError(err).
			Warn("etcd does not answer yet; retrying")
		select {
		case <-ctx.Done():
		case <-time.After(max(min(time.Until(next), time.Until(deadline)), 0)):
		}
	}
}

// permanent tells errors that retrying cannot fix, such as a refused login.
func permanent(err error) bool {
	return errors.Is(err, rpctypes.ErrAuthFailed) || errors.Is(err, rpctypes.ErrGRPCAuthFailed) ||
		strings.Contains(err.Error(), "authentication failed")
}

// healthKey is the key Connect reads to see that etcd answers. A user
// allowed only the keys of its job may not read it: etcd's refusal is an
// answer too, from a member that took the login.
const healthKey = "health-check-of-trainmaster"

// try makes one attempt: a client and one read, within wait.
func (o Options) try(ctx context.Context, tlsCfg *tls.Config, wait time.Duration) (*clientv3.Client, error) {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints: o.Endpoints, DialTimeout: wait, TLS: tlsCfg,
		Username: o.User, Password: o.Password, Logger: zap.NewNop(), Context: ctx,
	})
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if _, err := cli.Get(cctx, healthKey); err != nil && !errors.Is(err, rpctypes.ErrPermissionDenied) {
		cli.Close()
		return nil, err
	}
	return cli, nil
}

func (o Options) unreachable(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return errors.Wrapf(err, "etcd at %s did not answer within %v (-etcd-dial-timeout; check the endpoints and the TLS flags)",
			strings.Join(o.Endpoints, ","), o.DialTimeout)
	}
	return errors.Wrapf(err, "etcd at %s", strings.Join(o.Endpoints, ","))
}

// endpoints is a flag.Value for a comma-separated list.
type endpoints []string

func (e *endpoints) String() string { return strings.Join(*e, ",") }

func (e *endpoints) Set(v string) error {
	*e = nil
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*e = append(*e, s)
		}
	}
	return nil
}
