package etcdembed

import (
	"time"

	"github.com/pkg/errors"
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
	DefaultMaxTxnOps    = 8192
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
	// MaxTxnOps is the most operations of a transaction; 0 =
	// DefaultMaxTxnOps, where etcd's own default is 128: the master's
	// commits then take up to a transaction's bytes of what waits.
	MaxTxnOps uint
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
