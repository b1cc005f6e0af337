package master

import (
	"crypto/tls"
	"crypto/x509"
	"os"

	"github.com/pkg/errors"
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
	pool, err := loadCAs(clientCAFile)
	if err != nil {
		return nil, err
	}
	cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
	return cfg, nil
}

func loadCAs(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, errors.Wrap(err, "master: read -tls-client-ca")
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, errors.Errorf("master: -tls-client-ca %s holds no PEM certificate", path)
	}
	return pool, nil
}
