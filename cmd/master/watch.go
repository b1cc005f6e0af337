package main

import (
	"context"
	"crypto/tls"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/namsral/flag"
	"github.com/pkg/errors"

	"github.com/trainmaster/master/go/discovery"
	"github.com/trainmaster/master/internal/credfile"
	"github.com/trainmaster/master/internal/etcdconn"
	"github.com/trainmaster/master/internal/statusapi"
	"github.com/trainmaster/master/internal/watch"
)

// watchOptions are the flags of `master watch`.
type watchOptions struct {
	etcd      etcdconn.Options
	namespace string
	dataDir   string
	addr      string // poll this page, not the leader's from etcd
	interval  time.Duration
	tokenFile string
	tlsCA     string
	tlsCert   string
	tlsKey    string
	plain     bool
}

// commandLineOnly are the flags of `master watch` that the environment
// does not set: the master's own MASTER_ADDR, MASTER_TLS_CERT and
// MASTER_TLS_KEY name its trainer port and its server certificate, not a
// status page and a client certificate. (MASTER_TOKEN_FILE is the token of
// the master's door too, and is welcome.)
var commandLineOnly = []string{"addr", "tls-cert", "tls-key"}

func parseWatchFlags(args []string, stderr io.Writer) (watchOptions, error) {
	var o watchOptions
	fs := flag.NewFlagSetWithEnvPrefix("master watch", "MASTER", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o.etcd.Register(fs)
	fs.StringVar(&o.namespace, "namespace", "", "`prefix` of the job's etcd keys, where the leading master's page is found")
	fs.StringVar(&o.dataDir, "data-dir", "./master-data", "`directory` of an embedded etcd, whose endpoint file is used when neither -endpoints nor -addr is given")
	fs.StringVar(&o.addr, "addr", "", "watch the status page at this `host:port` (a master's -http-addr) instead of finding the leader's through etcd")
	fs.DurationVar(&o.interval, "interval", time.Second, "poll the status page this `often`")
	fs.StringVar(&o.tokenFile, "token-file", "", "send the master's token held in this `file` (Authorization: Bearer)")
	fs.StringVar(&o.tlsCA, "tls-ca", "", "speak HTTPS to the page, trusting the CA certificates in this `file` (PEM)")
	fs.StringVar(&o.tlsCert, "tls-cert", "", "client certificate `file` (PEM; with -tls-key and -tls-ca) for a master started with -tls-client-ca")
	fs.StringVar(&o.tlsKey, "tls-key", "", "private key `file` of -tls-cert (PEM)")
	fs.BoolVar(&o.plain, "plain", false, "print plain summary lines even on a terminal")
	for _, name := range commandLineOnly {
		_ = fs.Set(name, "") // marks them set, so that the environment is not read for them
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	switch {
	case fs.NArg() > 0:
		return o, errors.Errorf("unexpected arguments %q", fs.Args())
	case o.interval <= 0:
		return o, errors.Errorf("-interval must be positive, not %v", o.interval)
	case (o.tlsCert == "") != (o.tlsKey == ""):
		return o, errors.New("give -tls-cert and -tls-key together")
	case o.tlsCert != "" && o.tlsCA == "":
		return o, errors.New("-tls-cert needs -tls-ca (the CA of the master's certificate)")
	}
	return o, nil
}

// runWatch is `master watch`: a live view of a job in the terminal
// (internal/watch), from the leading master's /status.json, found through
// etcd's lock keys unless -addr names one page. On a terminal the view is
// redrawn in place; elsewhere, or with -plain, it prints summary lines. It
// ends with nil once all passes are done, and when ctx ends (Ctrl-C,
// SIGTERM); a page that refuses its locks, or a leader that serves no
// page, ends it at once with an error naming the address.
func runWatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseWatchFlags(args, stderr)
	if err != nil {
		return err
	}
	pages, err := o.pageClient()
	if err != nil {
		return err
	}
	cfg := watch.Config{Pages: pages, Addr: o.addr, Namespace: o.namespace, Interval: o.interval, Out: stdout,
		Terminal: terminal(stdout, o.plain)}
	if o.addr == "" {
		if len(o.etcd.Endpoints) == 0 {
			if o.etcd.Endpoints, err = embeddedEndpoint(o.dataDir); err != nil {
				return errors.Wrap(err, "no -addr, no -endpoints, and no embedded etcd's endpoint file")
			}
		}
		log, err := newLogger("warn", stderr)
		if err != nil {
			return err
		}
		cli, err := o.etcd.Connect(ctx, log)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		defer cli.Close()
		cfg.Masters = func(ctx context.Context) ([]discovery.Master, error) {
			return discovery.Masters(ctx, cli, o.namespace)
		}
	}
	return watch.Run(ctx, cfg)
}

// terminal returns the size of the terminal out is, nil when it is none
// or plain lines are asked for.
func terminal(out io.Writer, plain bool) func() (cols, rows int) {
	f, ok := out.(*os.File)
	if !ok || plain {
		return nil
	}
	if _, _, ok := terminalSize(f); !ok {
		return nil
	}
	return func() (cols, rows int) {
		cols, rows, _ = terminalSize(f)
		return cols, rows
	}
}

// embeddedEndpoint reads the endpoint an embedded etcd wrote in dataDir;
// its error is the file's.
func embeddedEndpoint(dataDir string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, "endpoint"))
	if err != nil {
		return nil, err
	}
	return []string{strings.TrimSpace(string(b))}, nil
}

// pageClient is how the watch asks a status page: HTTP or HTTPS, with the
// token. A page answers at once or its master is in trouble; the door
// itself gives etcd 2 s to list the masters.
func (o watchOptions) pageClient() (*statusapi.Client, error) {
	cfg := statusapi.ClientConfig{Timeout: max(2*o.interval, 5*time.Second)}
	if o.tlsCA != "" {
		pool, err := credfile.CertPool(o.tlsCA)
		if err != nil {
			return nil, errors.WithMessage(err, "-tls-ca")
		}
		cfg.TLS = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
		if o.tlsCert != "" {
			pair, err := tls.LoadX509KeyPair(o.tlsCert, o.tlsKey)
			if err != nil {
				return nil, errors.WithMessage(err, "-tls-cert and -tls-key")
			}
			cfg.TLS.Certificates = []tls.Certificate{pair}
		}
	}
	if o.tokenFile != "" {
		token, err := credfile.Token(o.tokenFile)
		if err != nil {
			return nil, errors.WithMessage(err, "-token-file")
		}
		cfg.Token = token
	}
	return statusapi.NewClient(cfg), nil
}
