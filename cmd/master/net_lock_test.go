package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trainmaster/master/go/client"
	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/etcdembed/etcdtest"
)

// TestNetLockedPort: a master started with -tls-cert, -tls-key,
// -tls-client-ca and -token-file trains a job for a trainer with the CA,
// a client certificate and the token, and refuses, each with a clear
// error, a plain TCP client, a client without a certificate and a wrong
// token; its log names refused clients and never the token.
func TestNetLockedPort(t *testing.T) {
	certs := etcdtest.GenerateCerts(t)
	const token = "s3cret-T0ken"
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	pattern := writeDataset(t, 2)
	p, addr := startOnEtcd(t, "-tls-cert", certs.ServerCert, "-tls-key", certs.ServerKey,
		"-tls-client-ca", certs.CAFile, "-token-file", tokenFile, "-chunks-per-task", "10")
	p.awaitLog(`msg="trainer port" client_certs=true`, time.Second)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := client.New(client.Static(addr), client.Config{TLS: etcdtest.ClientTLS(t, certs), Token: token})
	defer c.Close()
	if err := c.ReportDataset(ctx, []string{pattern}); err != nil {
		t.Fatal(err)
	}
	records := 0
	for _, err := range c.Records(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		records++
	}
	if records != 2000 {
		t.Fatalf("%d records, want 2000", records)
	}

	for _, tc := range []struct {
		name string
		cfg  client.Config
		want string
	}{
		{"plain TCP", client.Config{Token: token}, "this port speaks TLS"},
		{"no client certificate", client.Config{TLS: etcdtest.ClientTLSNoCert(t, certs), Token: token}, "certificate required"},
		{"wrong token", client.Config{TLS: etcdtest.ClientTLS(t, certs), Token: "guess"}, wire.TextUnauthorized},
		{"no token", client.Config{TLS: etcdtest.ClientTLS(t, certs)}, wire.TextUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := client.New(client.Static(addr), tc.cfg)
			defer c.Close()
			_, err := c.GetTask(ctx, wire.Task{})
			if err == nil || !strings.Contains(err.Error(), tc.want) || ctx.Err() != nil {
				t.Fatalf("answered %v, want a final error with %q", err, tc.want)
			}
		})
	}
	p.awaitLog("refused a trainer connection: not authenticated", 5*time.Second)
	p.awaitLog("refused a trainer connection: TLS handshake failed", 5*time.Second)
	if strings.Contains(p.logText(), token) {
		t.Fatal("the token appears in the master's log")
	}
}

// TestNetExposureWarnings: the start-up log warns when the trainer port is
// open to a network without TLS or a token, says how to lock it, and says
// nothing on loopback or once locked.
func TestNetExposureWarnings(t *testing.T) {
	for _, tc := range []struct {
		addr      string
		port      portOptions
		want, not string
	}{
		{":8080", portOptions{}, "is open on every network interface without TLS or a token", ""},
		{"0.0.0.0:8080", portOptions{}, "-addr 127.0.0.1:8080 or a private address, -tls-cert and -tls-key with -tls-client-ca, or -token-file", ""},
		{"[::]:8080", portOptions{}, "on every network interface", ""},
		{"10.1.2.3:8080", portOptions{}, "is open on 10.1.2.3 without TLS or a token", ""},
		{":8080", portOptions{tokenFile: "t"}, "the token crosses the network in clear", "without TLS or a token"},
		{":8080", portOptions{tlsCert: "c", tlsKey: "k"}, "", "trainer port"},
		{":8080", portOptions{tlsCert: "c", tlsKey: "k", tokenFile: "t"}, "", "trainer port"},
		{"127.0.0.1:8080", portOptions{}, "", "trainer port"},
		{"localhost:8080", portOptions{}, "", "trainer port"},
		{"[::1]:8080", portOptions{}, "", "trainer port"},
	} {
		got := strings.Join(tc.port.exposureWarnings(tc.addr), "\n")
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) || (tc.not != "" && strings.Contains(got, tc.not)) {
			t.Errorf("%s %+v: warnings %q; want %q", tc.addr, tc.port, got, tc.want)
		}
	}
}

// TestNetPortFlags: flags of the trainer port that cannot work stop the
// master before it starts.
func TestNetPortFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-tls-cert", "c.pem"}, "give -tls-cert and -tls-key together"},
		{[]string{"-tls-client-ca", "ca.pem"}, "-tls-client-ca needs -tls-cert and -tls-key"},
		{[]string{"-max-conns", "0"}, "-max-conns must be positive"},
		{[]string{"-max-inflight", "-1"}, "-max-inflight must be positive"},
		{[]string{"-max-request-bytes", "0"}, "-max-request-bytes must be positive"},
		{[]string{"-idle-timeout", "-1s"}, "-idle-timeout must not be negative"},
		{[]string{"-max-request-bytes", "2147483648"}, "-max-request-bytes must be at most 1073741824"},
		{[]string{"-token-file", "/nonexistent/token"}, "read the token file"},
		{[]string{"-tls-cert", "/nonexistent/c.pem", "-tls-key", "/nonexistent/k.pem"}, "load -tls-cert and -tls-key"},
	} {
		out, err := exec.Command(binPath, append(tc.args, "-data-dir", t.TempDir())...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), tc.want) {
			t.Errorf("%q: exit %v, output %q; want a failure saying %q", tc.args, err, out, tc.want)
		}
	}
}
