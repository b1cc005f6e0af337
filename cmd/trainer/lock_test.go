package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/trainmaster/master/go/client"
	"github.com/trainmaster/master/go/client/clienttest"
	"github.com/trainmaster/master/go/recordio"
	"github.com/trainmaster/master/internal/etcdembed/etcdtest"
	"github.com/trainmaster/master/internal/master"
	"github.com/trainmaster/master/internal/master/mastertest"
	"github.com/trainmaster/master/internal/trainerport"
	"github.com/trainmaster/master/internal/trainerport/porttest"
)

// startLockedMaster serves a real master on a loopback port with TLS that
// requires client certificates and a token, and returns its address.
func startLockedMaster(t *testing.T, certs etcdtest.Certs, token string) string {
	t.Helper()
	quiet := logrus.New()
	quiet.SetOutput(io.Discard)
	svc, err := master.New(master.Config{ChunksPerTask: 2, Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Close)
	serverTLS := porttest.TLS(t, certs.ServerCert, certs.ServerKey, certs.CAFile)
	return mastertest.Serve(t, svc, trainerport.Config{TLS: serverTLS, Token: token, Log: quiet})
}

// TestLockedMaster: with the right CA, certificate and token (by flag or
// by TRAINER_TOKEN_FILE) the trainer consumes the dataset; each thing
// missing or wrong ends it at once with exit 1 and a message naming it,
// instead of retrying until interrupted.
func TestLockedMaster(t *testing.T) {
	checkGoroutines(t)
	certs := etcdtest.GenerateCerts(t)
	const token = "s3cret-T0ken"
	dir := t.TempDir()
	tokenFile, wrongFile := filepath.Join(dir, "token"), filepath.Join(dir, "wrong")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(wrongFile, []byte("guess\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	paths, _ := clienttest.WriteFiles(t, dir, 3, 30, 5)
	want, err := client.DigestRecords(recordio.ScanFiles(paths...))
	if err != nil {
		t.Fatal(err)
	}
	tlsFlags := []string{"-tls-ca", certs.CAFile, "-tls-cert", certs.ClientCert, "-tls-key", certs.ClientKey}
	for _, tc := range []struct {
		name     string
		args     []string
		envToken string // TRAINER_TOKEN_FILE
		code     int
		stderr   string
	}{
		{"token by flag", append(tlsFlags, "-token-file", tokenFile), "", 0, ""},
		{"token from the environment, server name", append(tlsFlags, "-tls-server-name", "localhost"), tokenFile, 0, ""},
		{"wrong token", tlsFlags, wrongFile, 1, "not authenticated"},
		{"no token", tlsFlags, "", 1, "not authenticated"},
		{"no client certificate", []string{"-tls-ca", certs.CAFile, "-token-file", tokenFile}, "", 1, "certificate required"},
		{"wrong server name", append(tlsFlags, "-tls-server-name", "master.example", "-token-file", tokenFile), "", 1, "not master.example"},
		{"no TLS", []string{"-token-file", tokenFile}, "", 1, "this port speaks TLS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("TRAINER_TOKEN_FILE", tc.envToken)
			addr := startLockedMaster(t, certs, token)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			args := append([]string{"-addr", addr, "-dataset", dir + "/part-*.recordio"}, tc.args...)
			r := runTrainer(ctx, args...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.stderr) || ctx.Err() != nil {
				t.Fatalf("exit %d, stderr %q; want %d and %q", r.code, r.stderr, tc.code, tc.stderr)
			}
			if tc.code == 0 && !strings.Contains(r.stdout, "pass 0: 90 records, 1980 bytes, digest "+want.String()) {
				t.Fatalf("stdout %q, want the whole dataset (digest %s)", r.stdout, want)
			}
			if strings.Contains(r.stderr+r.stdout, token) {
				t.Fatal("the token appears in the output")
			}
		})
	}
}

// TestLockFlags: TLS flags that cannot work are refused before anything
// starts.
func TestLockFlags(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"-addr", "127.0.0.1:1", "-tls-cert", "c.pem"}, 2, "give -tls-cert and -tls-key together"},
		{[]string{"-addr", "127.0.0.1:1", "-tls-ca", "/nonexistent/ca.pem"}, 1, "-tls-ca: open /nonexistent/ca.pem"},
		{[]string{"-addr", "127.0.0.1:1", "-token-file", "/nonexistent/token"}, 1, "-token-file: open /nonexistent/token"},
	} {
		r := runTrainer(context.Background(), tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.stderr) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", tc.args, r.code, r.stderr, tc.code, tc.stderr)
		}
	}
}
