package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/trainmaster/master/internal/etcdembed/etcdtest"
)

// TestTLSAndAuth runs the master against an etcd that requires client
// certificates and a password, and checks the password is never logged.
func TestTLSAndAuth(t *testing.T) {
	certs := etcdtest.GenerateCerts(t)
	srv, cli := etcdtest.Start(t, etcdtest.WithTLS(certs))
	const password = "s3cret-Passw0rd"
	etcdtest.EnableAuth(t, cli, "trainmaster", password)
	endpoints := strings.Join(srv.Endpoints(), ",")
	tlsFlags := []string{"-endpoints", endpoints, "-etcd-dial-timeout", "3s",
		"-etcd-cacert", certs.CAFile, "-etcd-cert", certs.ClientCert, "-etcd-key", certs.ClientKey}

	t.Setenv("MASTER_ETCD_PASSWORD", password)
	p := startMaster(t, append(tlsFlags, "-etcd-user", "trainmaster")...)
	addr := p.awaitServing(30 * time.Second)
	if st := status(t, addr); st.DatasetReported {
		t.Fatalf("status %+v", st)
	}
	out, err := exec.Command(binPath, append([]string{"inspect"}, append(tlsFlags, "-etcd-user", "trainmaster")...)...).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "master:     "+addr) {
		t.Fatalf("inspect over TLS with auth: %v\n%s", err, out)
	}
	if strings.Contains(p.logText(), password) || strings.Contains(string(out), password) {
		t.Fatal("the password appears in the logs")
	}

	for _, tc := range []struct {
		name string
		args []string
		env  string
		want string
	}{
		{"no client certificate", []string{"-endpoints", endpoints, "-etcd-dial-timeout", "2s", "-etcd-cacert", certs.CAFile, "-etcd-user", "trainmaster"}, password, "did not answer"},
		{"wrong password", append(tlsFlags, "-etcd-user", "trainmaster"), "wrong", "authentication failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(binPath, append(tc.args, "-data-dir", t.TempDir())...)
			cmd.Env = append(os.Environ(), "MASTER_ETCD_PASSWORD="+tc.env)
			out, err := cmd.CombinedOutput()
			if err == nil || !strings.Contains(string(out), tc.want) {
				t.Fatalf("exit %v, output %q; want a failure saying %q", err, out, tc.want)
			}
			if strings.Contains(string(out), password) {
				t.Fatal("the password appears in the output")
			}
		})
	}
}

// TestEtcdUnreachableAtStart: the master says it is retrying, then gives up
// with a clear error after -etcd-dial-timeout.
func TestEtcdUnreachableAtStart(t *testing.T) {
	start := time.Now()
	out, err := exec.Command(binPath, "-endpoints", "http://127.0.0.1:1", "-etcd-dial-timeout", "3s").CombinedOutput()
	took := time.Since(start)
	if err == nil {
		t.Fatal("the master started without etcd")
	}
	text := string(out)
	if strings.Count(text, "etcd does not answer yet; retrying") < 2 ||
		!strings.Contains(text, "master: etcd at http://127.0.0.1:1 did not answer within 3s") {
		t.Fatalf("output:\n%s", text)
	}
	if took < 2500*time.Millisecond || took > 10*time.Second {
		t.Fatalf("gave up after %v, want about the 3 s dial timeout", took)
	}
}
