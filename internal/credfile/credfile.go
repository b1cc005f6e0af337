// Package credfile reads the files that lock a connection: PEM bundles of
// CA certificates, and shared tokens. The master, its trainers and the
// etcd client read them alike; errors name the file, and callers add the
// flag that named it.
package credfile

import (
	"crypto/x509"
	"os"
	"strings"

	"github.com/pkg/errors"
)

// CertPool returns the CA certificates of the PEM file at path. A file
// holding none is an error: it would trust nothing.
func CertPool(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, err // an *os.PathError: it names the file
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, errors.Errorf("%s holds no PEM certificate", path)
	}
	return pool, nil
}

// Token returns the token held in the file at path, without the white
// space around it. An empty token is an error: it would lock nothing.
func Token(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	token := strings.TrimSpace(string(b))
	if token == "" {
		return "", errors.Errorf("the token file %s is empty", path)
	}
	return token, nil
}
