package main

import (
	"crypto/tls"

	"github.com/namsral/flag"
	"github.com/pkg/errors"

	"github.com/trainmaster/master/internal/credfile"
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
		pool, err := credfile.CertPool(l.tlsCA)
		if err != nil {
			return nil, errors.WithMessage(err, "-tls-ca")
		}
		cfg.RootCAs = pool
	}
	if l.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(l.tlsCert, l.tlsKey)
		if err != nil {
			return nil, errors.WithMessage(err, "-tls-cert and -tls-key")
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
	token, err := credfile.Token(l.tokenFile)
	return token, errors.WithMessage(err, "-token-file")
}
