// Package statusweb is a master's HTTP side door: Prometheus metrics, the
// health and readiness probes, a status page for people and the same data
// as JSON. Every master serves it, the standbys too (they say they do not
// lead), so that one scrape configuration and one probe cover them all.
//
//	/metrics      Prometheus text format (the monitor's metrics, Go's and the process's)
//	/healthz      200 "ok" while the process runs
//	/readyz       200 "leading" on the leader, 503 "standing by" elsewhere
//	/status.json  statusapi.Status, with the masters read from the lock keys
//	/             the status page: the same, as HTML with inline SVG, refreshing itself
//
// Locks: with a token, every path but the probes wants the header
// "Authorization: Bearer <token>"; with TLS and client CAs, every path but
// the probes wants a verified client certificate (the probes stay open so
// that an orchestrator's checks need no secret, and tell nothing else).
package statusweb

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"encoding/json"
	stdlog "log"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/pkg/errors"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/sirupsen/logrus"

	"github.com/trainmaster/master/go/discovery"
	"github.com/trainmaster/master/internal/monitor"
	"github.com/trainmaster/master/internal/ratelog"
	"github.com/trainmaster/master/internal/statusapi"
)

// Config configures a Server.
type Config struct {
	Monitor *monitor.Monitor
	// Masters reads the job's masters (discovery.Masters); nil: none shown.
	Masters func(ctx context.Context) ([]discovery.Master, error)
	// TLS, if set, serves HTTPS; with ClientCAs set, the data paths want a
	// verified client certificate.
	TLS *tls.Config
	// Token, if set, is wanted as a bearer token on the data paths.
	Token string
	// Refresh is how often the page reloads itself; default 5 s.
	Refresh time.Duration
	Log     logrus.FieldLogger
}

// Server serves the side door.
type Server struct {
	cfg      Config
	handler  http.Handler
	refusals *ratelog.Limiter // the warnings of refused requests, which any client can cause
}

// mastersTimeout bounds the read of the lock keys a page or a JSON status
// makes: a slow etcd must not hold the page.
const mastersTimeout = 2 * time.Second

// New returns a Server; it registers the monitor's collector in a registry
// of its own.
func New(cfg Config) (*Server, error) {
	if cfg.Monitor == nil {
		return nil, errors.New("statusweb: no monitor")
	}
	if cfg.Refresh <= 0 {
		cfg.Refresh = 5 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = logrus.StandardLogger()
	}
	reg := prometheus.NewRegistry()
	for _, c := range []prometheus.Collector{cfg.Monitor.Collector(), collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})} {
		if err := reg.Register(c); err != nil {
			return nil, errors.Wrap(err, "statusweb: register metrics")
		}
	}
	s := &Server{cfg: cfg, refusals: ratelog.New(ratelog.Interval, time.Now)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { text(w, http.StatusOK, "ok") })
	mux.HandleFunc("GET /readyz", s.ready)
	mux.Handle("GET /metrics", s.locked(promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: logAdapter{cfg.Log}})))
	mux.Handle("GET /status.json", s.locked(http.HandlerFunc(s.statusJSON)))
	mux.Handle("GET /{$}", s.locked(http.HandlerFunc(s.page)))
	s.handler = mux
	return s, nil
}

// Handler returns the side door's handler.
func (s *Server) Handler() http.Handler { return s.handler }

// Serve serves lis until ctx ends, then shuts down within a second.
func (s *Server) Serve(ctx context.Context, lis net.Listener) error {
	hs := &http.Server{Handler: s.handler, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10,
		TLSConfig: s.cfg.TLS, ErrorLog: stdlog.New(debugWriter{s.cfg.Log}, "", 0)}
	if s.cfg.TLS != nil {
		lis = tls.NewListener(lis, s.cfg.TLS)
	}
	stop := context.AfterFunc(ctx, func() {
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if hs.Shutdown(sctx) != nil {
			hs.Close()
		}
	})
	defer stop()
	err := hs.Serve(lis)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return errors.Wrap(err, "statusweb: serve")
}

// ServerTLS returns the side door's TLS configuration from the trainer
// port's: the same certificate, and client certificates verified when
// given rather than required at the handshake, so that the probes need
// none (locked asks for one on the data paths).
func ServerTLS(port *tls.Config) *tls.Config {
	if port == nil {
		return nil
	}
	c := port.Clone()
	if c.ClientCAs != nil {
		c.ClientAuth = tls.VerifyClientCertIfGiven
	}
	c.NextProtos = []string{"http/1.1"}
	return c
}

// locked wants the token and the client certificate the configuration
// asks for before h.
func (s *Server) locked(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.TLS != nil && s.cfg.TLS.ClientCAs != nil && (r.TLS == nil || len(r.TLS.VerifiedChains) == 0) {
			s.refuse(w, r, http.StatusForbidden, "a client certificate signed by the master's client CA is needed")
			return
		}
		if s.cfg.Token != "" {
			got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(s.cfg.Token)) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="trainmaster"`)
				s.refuse(w, r, http.StatusUnauthorized, "the master's token is needed: send the header 'Authorization: Bearer <token>'")
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// refuse answers a request that lacks its credentials, with a warning at
// most once per ratelog.Interval for each reason.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, code int, why string) {
	s.refusals.Log(s.cfg.Log, logrus.WarnLevel, logrus.Fields{"remote": r.RemoteAddr, "path": r.URL.Path}, "status request refused: "+why)
	text(w, code, why)
}

func (s *Server) ready(w http.ResponseWriter, _ *http.Request) {
	if s.cfg.Monitor.Leading() {
		text(w, http.StatusOK, "leading")
		return
	}
	text(w, http.StatusServiceUnavailable, "standing by")
}

// status returns the monitor's status with the masters.
func (s *Server) status(ctx context.Context) statusapi.Status {
	st := s.cfg.Monitor.Status()
	st.Masters = []discovery.Master{}
	if s.cfg.Masters == nil {
		return st
	}
	ctx, cancel := context.WithTimeout(ctx, mastersTimeout)
	defer cancel()
	masters, err := s.cfg.Masters(ctx)
	if err != nil {
		st.MastersError = err.Error()
		return st
	}
	st.Masters = masters
	return st
}

func (s *Server) statusJSON(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(s.status(r.Context())); err != nil {
		s.cfg.Log.WithError(err).Debug("status.json: write")
	}
}

func text(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(msg + "\n"))
}

// debugWriter writes the HTTP server's own complaints (failed handshakes,
// malformed requests: what any client can cause) as debug lines.
type debugWriter struct{ log logrus.FieldLogger }

func (w debugWriter) Write(p []byte) (int, error) {
	w.log.Debug("status door: " + strings.TrimSpace(string(p)))
	return len(p), nil
}

// logAdapter gives promhttp's error log the master's logger.
type logAdapter struct{ log logrus.FieldLogger }

func (l logAdapter) Println(v ...any) { l.log.Warn(v...) }
