package main

import (
	"crypto/tls"
	"fmt"
	"net"
	"time"

	"github.com/namsral/flag"
	"github.com/pkg/errors"
	"github.com/sirupsen/logrus"

	"github.com/trainmaster/master/internal/credfile"
	osproc "github.com/trainmaster/master/internal/proc"
	"github.com/trainmaster/master/internal/trainerport"
)

// The trainer port's limits and locks: flags, checks and the start-up
// lines that say what the port lets in.

// portOptions are the flags of the trainer port (see trainerport.Limits
// and trainerport.ServerTLS).
type portOptions struct {
	limits      trainerport.Limits
	idleTimeout time.Duration
	tlsCert     string
	tlsKey      string
	tlsClientCA string
	tokenFile   string
	// maxConnsWhy says why -max-conns defaults to what it does, logged at
	// start-up unless maxConnsGiven: by flag, environment or -config
	// (parseFlags sets it once they are all applied).
	maxConnsWhy   string
	maxConnsGiven bool
}

func (p *portOptions) register(fs *flag.FlagSet) {
	def := trainerport.DefaultMaxConns(osproc.FileLimit())
	p.maxConnsWhy = def.Why
	fs.IntVar(&p.limits.MaxConns, "max-conns", def.MaxConns, fmt.Sprintf("most trainer `connections` served at once; one more is closed at once, with a warning (default: the file limit less %d, at most %d)",
		trainerport.ReservedFiles, trainerport.MaxDefaultConns))
	fs.DurationVar(&p.idleTimeout, "idle-timeout", trainerport.DefaultIdleTimeout, "close a trainer connection with no call in flight that received nothing for this `long` (0: never); trainers reconnect by themselves")
	fs.IntVar(&p.limits.MaxRequestBytes, "max-request-bytes", trainerport.DefaultMaxRequestBytes, "largest message of a request, in `bytes`: a larger argument is answered an error, a larger header closes the connection")
	fs.IntVar(&p.limits.MaxInflight, "max-inflight", trainerport.DefaultMaxInflight, "most `calls` of one connection awaiting replies; the master reads no more of the connection meanwhile")
	fs.StringVar(&p.tlsCert, "tls-cert", "", "serve trainers over TLS with this certificate `file` (PEM; with -tls-key)")
	fs.StringVar(&p.tlsKey, "tls-key", "", "private key `file` of -tls-cert (PEM)")
	fs.StringVar(&p.tlsClientCA, "tls-client-ca", "", "admit only trainers with a client certificate signed by a CA in this `file` (PEM; needs -tls-cert)")
	fs.StringVar(&p.tokenFile, "token-file", "", "admit only trainers that present the token held in this `file` (Master.Authenticate)")
}

func (p *portOptions) check() error {
	switch {
	case p.limits.MaxConns <= 0:
		return errors.Errorf("-max-conns must be positive, not %d", p.limits.MaxConns)
	case p.limits.MaxRequestBytes <= 0:
		return errors.Errorf("-max-request-bytes must be positive, not %d", p.limits.MaxRequestBytes)
	case p.limits.MaxInflight <= 0:
		return errors.Errorf("-max-inflight must be positive, not %d", p.limits.MaxInflight)
	case p.idleTimeout < 0:
		return errors.Errorf("-idle-timeout must not be negative, not %v", p.idleTimeout)
	case (p.tlsCert == "") != (p.tlsKey == ""):
		return errors.New("give -tls-cert and -tls-key together")
	case p.tlsClientCA != "" && p.tlsCert == "":
		return errors.New("-tls-client-ca needs -tls-cert and -tls-key")
	}
	return nil
}

// serverConfig loads the certificates and the token the flags name.
func (p *portOptions) serverConfig() (trainerport.Config, error) {
	cfg := trainerport.Config{Limits: p.limits}
	cfg.Limits.IdleTimeout = p.idleTimeout
	if p.idleTimeout == 0 {
		cfg.Limits.IdleTimeout = -1 // never
	}
	if err := cfg.Limits.Validate(); err != nil {
		return cfg, err
	}
	var err error
	if p.tlsCert != "" {
		if cfg.TLS, err = serverTLS(p.tlsCert, p.tlsKey, p.tlsClientCA); err != nil {
			return cfg, err
		}
	}
	if p.tokenFile != "" {
		if cfg.Token, err = readToken(p.tokenFile); err != nil {
			return cfg, err
		}
	}
	return cfg, nil
}

// serverTLS returns the trainer port's TLS configuration: the certificate
// and key in certFile and keyFile (PEM) and, when clientCAFile is given,
// the CAs a trainer's client certificate must be signed by.
func serverTLS(certFile, keyFile, clientCAFile string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, errors.Wrap(err, "master: load -tls-cert and -tls-key")
	}
	if clientCAFile == "" {
		return trainerport.ServerTLS(cert, nil), nil
	}
	pool, err := credfile.CertPool(clientCAFile)
	if err != nil {
		return nil, errors.WithMessage(err, "master: -tls-client-ca")
	}
	return trainerport.ServerTLS(cert, pool), nil
}

// readToken reads the shared token of the trainer port from path: the
// file's content without the white space around it. An empty token is an
// error: it would lock nothing.
func readToken(path string) (string, error) {
	token, err := credfile.Token(path)
	return token, errors.WithMessage(err, "master: read the token file")
}

// logExposure says at start-up what the trainer port at addr lets in and,
// when it is open to a network without TLS or a token, how to lock it.
func (p *portOptions) logExposure(log logrus.FieldLogger, addr string) {
	log.WithFields(logrus.Fields{
		"listen": addr, "tls": p.tlsCert != "", "client_certs": p.tlsClientCA != "", "token": p.tokenFile != "",
		"max_conns": p.limits.MaxConns, "idle_timeout": p.idleTimeout.String(),
		"max_request_bytes": p.limits.MaxRequestBytes, "max_inflight": p.limits.MaxInflight,
	}).Info("trainer port")
	if !p.maxConnsGiven {
		log.Info(p.maxConnsWhy)
	}
	for _, w := range p.exposureWarnings(addr) {
		log.Warn(w)
	}
}

// exposureWarnings are the warnings about a trainer port at addr.
func (p *portOptions) exposureWarnings(addr string) []string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || isLoopback(host) {
		return nil
	}
	where := "on " + host
	if host == "" || host == "0.0.0.0" || host == "::" {
		where = "on every network interface"
	}
	switch {
	case p.tlsCert == "" && p.tokenFile == "":
		return []string{fmt.Sprintf("the trainer port %s is open %s without TLS or a token: anyone who reaches it can report a dataset, take and report tasks, and read the dataset's file names; "+
			"lock it with -addr 127.0.0.1:%s or a private address, -tls-cert and -tls-key with -tls-client-ca, or -token-file", addr, where, port)}
	case p.tokenFile != "" && p.tlsCert == "":
		return []string{fmt.Sprintf("the trainer port %s takes a token without TLS: the token crosses the network in clear; add -tls-cert and -tls-key", addr)}
	}
	return nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
