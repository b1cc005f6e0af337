package etcdtest

import (
	"crypto/tls"
	"crypto/x509"
	"testing"
	"time"
)

func TestGenerateCertsVerify(t *testing.T) {
	c := GenerateCerts(t)
	roots := serverTrust(t, c).RootCAs
	tests := []struct {
		name, cert, key string
		usage           x509.ExtKeyUsage
		host            string
	}{
		{"server by IP", c.ServerCert, c.ServerKey, x509.ExtKeyUsageServerAuth, "127.0.0.1"},
		{"server by name", c.ServerCert, c.ServerKey, x509.ExtKeyUsageServerAuth, "localhost"},
		{"server as client (gateway)", c.ServerCert, c.ServerKey, x509.ExtKeyUsageClientAuth, ""},
		{"client", c.ClientCert, c.ClientKey, x509.ExtKeyUsageClientAuth, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pair, err := tls.LoadX509KeyPair(tc.cert, tc.key)
			if err != nil {
				t.Fatal(err)
			}
			leaf, err := x509.ParseCertificate(pair.Certificate[0])
			if err != nil {
				t.Fatal(err)
			}
			_, err = leaf.Verify(x509.VerifyOptions{
				DNSName: tc.host, Roots: roots, KeyUsages: []x509.ExtKeyUsage{tc.usage},
			})
			if err != nil {
				t.Fatal(err)
			}
			if d := time.Until(leaf.NotAfter); d < 23*time.Hour || d > 25*time.Hour {
				t.Errorf("valid for another %v, want 24h", d)
			}
		})
	}
	if cfg := ClientTLS(t, c); len(cfg.Certificates) != 1 || cfg.RootCAs == nil {
		t.Errorf("ClientTLS: %d certificates, roots %v", len(cfg.Certificates), cfg.RootCAs)
	}
}
