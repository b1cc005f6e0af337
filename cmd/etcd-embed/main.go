// Command etcd-embed is a tiny etcd server: one member of package
// go/etcdembed in a process of its own, for tests that must kill a member
// with a real signal, and for demos.
//
// Once the member is ready it prints exactly one line to stdout,
//
//	ready http://127.0.0.1:2379
//
// naming its client endpoint; everything else goes to stderr. SIGINT or
// SIGTERM stops it gracefully with exit status 0; any error (bad flags, data
// directory unusable or in use, port taken, fatal etcd error) exits 1 with a
// message on stderr.
//
// Every flag can also be set from the environment as ETCD_EMBED_<FLAG>
// (dashes become underscores, e.g. ETCD_EMBED_DATA_DIR=/var/lib/etcd) or
// from a file named by -config holding "flag value" lines.
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/namsral/flag"
	"github.com/pkg/errors"

	"github.com/trainmaster/master/internal/etcdembed"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "etcd-embed: %v\n", err)
		os.Exit(1)
	}
}

// parseFlags turns the command line (and ETCD_EMBED_* variables) into a
// member configuration.
func parseFlags(args []string, stderr io.Writer) (etcdembed.Config, error) {
	var (
		c   etcdembed.Config
		tls etcdembed.TLSConfig
	)
	fs := flag.NewFlagSetWithEnvPrefix("etcd-embed", "ETCD_EMBED", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.String(flag.DefaultConfigFlagname, "", "read flags from this `file` (lines of: flag value)")
	fs.StringVar(&c.Name, "name", etcdembed.DefaultName, "member `name`")
	fs.StringVar(&c.Dir, "data-dir", "", "data `directory` (required)")
	fs.StringVar(&c.ClientAddr, "listen-client", "127.0.0.1:2379", "`host:port` for clients (port 0: a free port)")
	fs.StringVar(&c.PeerAddr, "listen-peer", "127.0.0.1:2380", "`host:port` for peers (port 0: a free port, or the one in -initial-cluster)")
	fs.StringVar(&c.InitialCluster, "initial-cluster", "", "`name=http://host:port,...` with an entry for this member (default: this member alone)")
	fs.StringVar(&c.ClusterState, "initial-cluster-state", etcdembed.ClusterStateNew, "new or existing")
	fs.StringVar(&c.ClusterToken, "cluster-token", etcdembed.DefaultClusterToken, "initial cluster `token`")
	fs.BoolVar(&c.UnsafeNoFsync, "unsafe-no-fsync", false, "skip fsync: fast, loses data on a machine crash (tests only)")
	fs.Int64Var(&c.QuotaBackendBytes, "quota-backend-bytes", 0, "backend size `limit` (0: etcd's default, 2 GiB)")
	fs.UintVar(&c.MaxRequestBytes, "max-request-bytes", 0, "largest request in `bytes` (0: etcd's default, 1.5 MiB)")
	fs.UintVar(&c.MaxTxnOps, "max-txn-ops", 0, fmt.Sprintf("most `operations` of a transaction (0: %d; etcd's own default is 128)", etcdembed.DefaultMaxTxnOps))
	fs.StringVar(&c.AutoCompactionRetention, "auto-compaction-retention", "", "history to keep: revisions with mode revision, a duration with mode periodic (empty or 0: no auto-compaction)")
	fs.StringVar(&c.AutoCompactionMode, "auto-compaction-mode", "periodic", "revision or periodic")
	fs.StringVar(&tls.CertFile, "cert-file", "", "server certificate `file` (PEM); serves clients over https")
	fs.StringVar(&tls.KeyFile, "key-file", "", "server key `file` (PEM)")
	fs.StringVar(&tls.TrustedCAFile, "trusted-ca-file", "", "CA `file` (PEM) that signs client certificates")
	fs.BoolVar(&tls.ClientCertAuth, "client-cert-auth", false, "require client certificates signed by -trusted-ca-file")
	fs.StringVar(&c.LogLevel, "log-level", etcdembed.DefaultLogLevel, "etcd's log `level`: debug, info, warn, error")
	fs.DurationVar(&c.ReadyTimeout, "ready-timeout", etcdembed.DefaultReadyTimeout, "give up if the member is not ready within this `duration`")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, errors.Errorf("unexpected arguments %q", fs.Args())
	}
	if c.Dir == "" {
		return c, errors.New("-data-dir is required")
	}
	if tls != (etcdembed.TLSConfig{}) {
		if tls.CertFile == "" || tls.KeyFile == "" {
			return c, errors.New("TLS needs both -cert-file and -key-file")
		}
		if tls.ClientCertAuth && tls.TrustedCAFile == "" {
			return c, errors.New("-client-cert-auth needs -trusted-ca-file")
		}
		c.TLS = &tls
	}
	return c, nil
}

// run serves until ctx ends (nil) or the member fails (an error).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	logger := log.New(stderr, "etcd-embed: ", log.LstdFlags)
	begin := time.Now()
	s, err := etcdembed.Start(ctx, cfg)
	if err != nil {
		if ctx.Err() != nil { // a signal while starting: as asked
			logger.Printf("stopped before ready: %v", err)
			return nil
		}
		return err
	}
	defer s.Close()
	logger.Printf("%v ready in %v", s, time.Since(begin).Round(time.Millisecond))
	if _, err := fmt.Fprintf(stdout, "ready %s\n", s.Endpoints()[0]); err != nil {
		return errors.WithMessage(err, "write ready line")
	}
	select {
	case <-ctx.Done():
		logger.Printf("stopping: %v", context.Cause(ctx))
		s.Close()
		logger.Printf("stopped")
		return nil
	case err := <-s.Err():
		return err
	}
}
