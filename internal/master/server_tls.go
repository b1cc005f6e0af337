package master

import (
	"crypto/tls"

	"github.com/pkg/errors"

	"github.com/trainmaster/master/internal/credfile"
)

// ServerTLS returns the TLS configuration of the trainer port: the
// certificate and key in certFile and keyFile (PEM) and, when clientCAFile
// is given, a demand for a client certificate signed by one of the CAs it
// holds: a trainer without one is refused during the handshake. TLS 1.2 at
// least.
func ServerTLS(certFile, keyFile, clientCAFile string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, errors.Wrap(err, "master: load -tls-cert and -tls-key")
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if clientCAFile == "" {
		return cfg, nil
	}
	pool, err := credfile.CertPool(clientCAFile)
	if err != nil {
		return nil, errors.WithMessage(err, "master: -tls-client-ca")
	}
	cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
	return cfg, nil
}
