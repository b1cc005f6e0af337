// Package etcdconn is how every command of the project connects to etcd:
// the same flags (endpoints, dial timeout, TLS client certificates,
// username and password) and the same check that etcd answers before the
// command goes on.
package etcdconn

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/namsral/flag"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
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
		pem, err := os.ReadFile(o.CACert)
		if err != nil {
			return nil, fmt.Errorf("etcd CA certificate: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("etcd CA certificate %s holds no PEM certificate", o.CACert)
		}
	}
	if o.Cert != "" || o.Key != "" {
		pair, err := tls.LoadX509KeyPair(o.Cert, o.Key)
		if err != nil {
			return nil, fmt.Errorf("etcd client certificate %s and key %s: %w", o.Cert, o.Key, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// Connect opens a client and checks that etcd answers within DialTimeout.
func (o Options) Connect(ctx context.Context) (*clientv3.Client, error) {
	if len(o.Endpoints) == 0 {
		return nil, fmt.Errorf("no etcd endpoints")
	}
	tlsCfg, err := o.TLS()
	if err != nil {
		return nil, err
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints: o.Endpoints, DialTimeout: o.DialTimeout, TLS: tlsCfg,
		Username: o.User, Password: o.Password, Logger: zap.NewNop(), Context: ctx,
	})
	if err != nil {
		return nil, o.unreachable(err)
	}
	cctx, cancel := context.WithTimeout(ctx, o.DialTimeout)
	defer cancel()
	if _, err := cli.Get(cctx, "health-check-of-trainmaster"); err != nil {
		cli.Close()
		return nil, o.unreachable(err)
	}
	return cli, nil
}

func (o Options) unreachable(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("etcd at %s did not answer within %v (-etcd-dial-timeout; check the endpoints and the TLS flags): %w",
			strings.Join(o.Endpoints, ","), o.DialTimeout, err)
	}
	return fmt.Errorf("etcd at %s: %w", strings.Join(o.Endpoints, ","), err)
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
