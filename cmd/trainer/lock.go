package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"

	"github.com/namsral/flag"
)

func (l *lockOptions) register(fs *flag.FlagSet) {
	fs.StringVar(&l.tlsCA, "tls-ca", "", "speak TLS to the master, trusting the CA certificates in this `file` (PEM)")
	fs.StringVar(&l.tlsCert, "tls-cert", "", "client certificate `file` (PEM; with -tls-key) for a master started with -tls-client-ca")
	fs.StringVar(&l.tlsKey, "tls-key", "", "private key `file` of -tls-cert (PEM)")
	fs.StringVar(&l.tlsServerName, "tls-server-name", "", "`name` to check the master's certificate against (default: the host dialled)")
	fs.StringVar(&l.tokenFile, "token-file", "", "present the master's token held in this `file` (also TRAINER_TOKEN_FILE)")
}

// tlsConfig is the TLS configuration the flags ask for; nil (plain TCP)
// when none of them is given.
func (l lockOptions) tlsConfig() (*tls.Config, error) {
	if l.tlsCA == "" && l.tlsCert == "" && l.tlsServerName == "" {
		return nil, nil
	}
	cfg := &tls.Config{ServerName: l.tlsServerName, MinVersion: tls.VersionTLS12}
	if l.tlsCA != "" {
		pem, err := os.ReadFile(l.tlsCA)
		if err != nil {
			return nil, fmt.Errorf("-tls-ca: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("-tls-ca %s holds no PEM certificate", l.tlsCA)
		}
	}
	if l.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(l.tlsCert, l.tlsKey)
		if err != nil {
			return nil, fmt.Errorf("-tls-cert and -tls-key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// token is the content of -token-file without the white space around it;
// "" without the flag.
func (l lockOptions) token() (string, error) {
	if l.tokenFile == "" {
		return "", nil
	}
	b, err := os.ReadFile(l.tokenFile)
	if err != nil {
		return "", fmt.Errorf("-token-file: %w", err)
	}
	token := strings.TrimSpace(string(b))
	if token == "" {
		return "", fmt.Errorf("-token-file %s is empty", l.tokenFile)
	}
	return token, nil
}
