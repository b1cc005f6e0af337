package etcdtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Certs are PEM files of a test PKI made by GenerateCerts.
type Certs struct {
	Dir        string // directory holding the files
	CAFile     string // self-signed CA certificate
	ServerCert string // server certificate for IP 127.0.0.1 and DNS localhost
	ServerKey  string
	ClientCert string // client certificate, common name "client"
	ClientKey  string
}

// ClientCommonName is the common name of the client certificate; with etcd
// auth enabled and client certificates required, etcd takes it as the user.
const ClientCommonName = "client"

// GenerateCerts writes a self-signed CA, a server certificate and a client
// certificate (ECDSA P-256, valid for 24 hours) as PEM files in t.TempDir().
// The server certificate allows client auth too, because etcd's gRPC
// gateway dials its own member with it when client certificates are
// required.
func GenerateCerts(t testing.TB) Certs {
	t.Helper()
	dir := t.TempDir()
	c := Certs{
		Dir:        dir,
		CAFile:     filepath.Join(dir, "ca.pem"),
		ServerCert: filepath.Join(dir, "server.pem"),
		ServerKey:  filepath.Join(dir, "server-key.pem"),
		ClientCert: filepath.Join(dir, "client.pem"),
		ClientKey:  filepath.Join(dir, "client-key.pem"),
	}
	now := time.Now()
	serial := int64(1)
	template := func(cn string) *x509.Certificate {
		serial++
		return &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: cn, Organization: []string{"trainmaster test"}},
			NotBefore:    now.Add(-time.Minute),
			NotAfter:     now.Add(24 * time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
		}
	}

	caKey := newKey(t)
	caTmpl := template("trainmaster test CA")
	caTmpl.IsCA = true
	caTmpl.BasicConstraintsValid = true
	caTmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, c.CAFile, "CERTIFICATE", caDER)

	issue := func(tmpl *x509.Certificate, certFile, keyFile string) {
		key := newKey(t)
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		writePEM(t, certFile, "CERTIFICATE", der)
		keyDER, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		writePEM(t, keyFile, "PRIVATE KEY", keyDER)
	}
	server := template("localhost")
	server.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
	server.DNSNames = []string{"localhost"}
	server.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	issue(server, c.ServerCert, c.ServerKey)

	client := template(ClientCommonName)
	client.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	issue(client, c.ClientCert, c.ClientKey)
	return c
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func writePEM(t testing.TB, path, typ string, der []byte) {
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// ClientTLS is a client TLS configuration that trusts the CA of c and
// presents its client certificate.
func ClientTLS(t testing.TB, c Certs) *tls.Config {
	t.Helper()
	cfg := serverTrust(t, c)
	cert, err := tls.LoadX509KeyPair(c.ClientCert, c.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Certificates = []tls.Certificate{cert}
	return cfg
}

// ClientTLSNoCert trusts the CA of c but presents no certificate: a client
// that a member requiring client certificates refuses.
func ClientTLSNoCert(t testing.TB, c Certs) *tls.Config {
	t.Helper()
	return serverTrust(t, c)
}

func serverTrust(t testing.TB, c Certs) *tls.Config {
	t.Helper()
	pemCA, err := os.ReadFile(c.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemCA) {
		t.Fatalf("no certificate in %s", c.CAFile)
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}
