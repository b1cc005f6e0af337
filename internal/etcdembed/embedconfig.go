package etcdembed

import (
	"net/url"
	"sync/atomic"

	"github.com/pkg/errors"
	"go.etcd.io/etcd/client/pkg/v3/logutil"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

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
	ec.MaxTxnOps = DefaultMaxTxnOps
	if r.MaxTxnOps > 0 {
		ec.MaxTxnOps = r.MaxTxnOps
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
