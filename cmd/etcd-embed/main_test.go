package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/trainmaster/master/internal/etcdembed"
	"github.com/trainmaster/master/internal/etcdembed/etcdtest"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
	buildDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// binary builds this command once per test run.
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		begin := time.Now()
		if buildDir, buildErr = os.MkdirTemp("", "etcd-embed-test"); buildErr != nil {
			return
		}
		binPath = filepath.Join(buildDir, "etcd-embed")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = errors.New("go build: " + err.Error() + "\n" + string(out))
		}
		t.Logf("built in %v", time.Since(begin).Round(time.Millisecond))
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

func freeAddr(t *testing.T) string {
	t.Helper()
	a, err := etcdembed.FreeLoopbackAddr()
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// proc is a running etcd-embed.
type proc struct {
	cmd    *exec.Cmd
	lines  chan string // stdout lines; closed at EOF
	stderr bytes.Buffer
	waited chan struct{}
	err    error // of Wait, once waited is closed
}

func startProc(t *testing.T, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(binary(t), args...), lines: make(chan string, 16), waited: make(chan struct{})}
	p.cmd.Stderr = &p.stderr
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
		p.err = p.cmd.Wait() // after stdout is drained, as Wait closes the pipe
		close(p.waited)
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.waited
	})
	return p
}

// ready waits for the ready line and returns its endpoint.
func (p *proc) ready(t *testing.T) string {
	t.Helper()
	select {
	case line, ok := <-p.lines:
		if !ok {
			<-p.waited
			t.Fatalf("exited before ready (%v): %s", p.err, p.stderr.String())
		}
		ep, found := strings.CutPrefix(line, "ready ")
		if !found {
			t.Fatalf("first line %q, want \"ready <endpoint>\"", line)
		}
		return ep
	case <-time.After(60 * time.Second):
		t.Fatal("no ready line within 60s")
	}
	return ""
}

// wait waits for the process to exit and returns its exit code.
func (p *proc) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-p.waited:
	case <-time.After(30 * time.Second):
		t.Fatal("still running 30s later")
	}
	var exit *exec.ExitError
	if errors.As(p.err, &exit) {
		return exit.ExitCode()
	}
	if p.err != nil {
		t.Fatal(p.err)
	}
	return 0
}

func client(t *testing.T, endpoint string) *clientv3.Client {
	return etcdtest.NewClient(t, []string{endpoint})
}

func ctx10s(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestServeAndStopOnSignal(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			clientAddr := freeAddr(t)
			p := startProc(t, "-data-dir", t.TempDir(), "-unsafe-no-fsync",
				"-listen-client", clientAddr, "-listen-peer", freeAddr(t))
			begin := time.Now()
			ep := p.ready(t)
			t.Logf("ready in %v", time.Since(begin).Round(time.Millisecond))
			if want := "http://" + clientAddr; ep != want {
				t.Errorf("ready %s, want %s", ep, want)
			}
			cli := client(t, ep)
			if _, err := cli.Put(ctx10s(t), "k", "v"); err != nil {
				t.Fatal(err)
			}
			resp, err := cli.Get(ctx10s(t), "k")
			if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "v" {
				t.Fatalf("get k: %v %v", resp, err)
			}
			cli.Close()

			begin = time.Now()
			p.cmd.Process.Signal(sig)
			if code := p.wait(t); code != 0 {
				t.Errorf("exit %d after %v, want 0; stderr:\n%s", code, sig, p.stderr.String())
			}
			t.Logf("stopped in %v", time.Since(begin).Round(time.Millisecond))
			for line := range p.lines {
				t.Errorf("more stdout after the ready line: %q", line)
			}
		})
	}
}

func TestStartFailures(t *testing.T) {
	clientAddr, peerAddr, dir := freeAddr(t), freeAddr(t), t.TempDir()
	first := startProc(t, "-data-dir", dir, "-unsafe-no-fsync", "-listen-client", clientAddr, "-listen-peer", peerAddr)
	first.ready(t)

	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want []string // in stderr
	}{
		{"same client port", []string{"-data-dir", t.TempDir(), "-listen-client", clientAddr, "-listen-peer", "127.0.0.1:0"},
			[]string{clientAddr, "address already in use"}},
		{"same peer port", []string{"-data-dir", t.TempDir(), "-listen-client", "127.0.0.1:0", "-listen-peer", peerAddr},
			[]string{peerAddr, "address already in use"}},
		{"same data dir", []string{"-data-dir", dir, "-listen-client", "127.0.0.1:0", "-listen-peer", "127.0.0.1:0"},
			[]string{dir, "in use by another etcd member"}},
		{"data dir not a directory", []string{"-data-dir", filepath.Join(file, "sub")},
			[]string{file, "not a directory"}},
		{"no data dir", nil, []string{"-data-dir is required"}},
		{"bad flag", []string{"-data-dir", dir, "-no-such-flag"}, []string{"no-such-flag"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := startProc(t, tc.args...)
			if code := p.wait(t); code != 1 {
				t.Errorf("exit %d, want 1", code)
			}
			for line := range p.lines {
				t.Errorf("stdout: %q", line)
			}
			for _, w := range tc.want {
				if !strings.Contains(p.stderr.String(), w) {
					t.Errorf("stderr does not mention %q:\n%s", w, p.stderr.String())
				}
			}
		})
	}
	// The first one is unharmed.
	if _, err := client(t, "http://"+clientAddr).Put(ctx10s(t), "still", "here"); err != nil {
		t.Fatal(err)
	}
}

func TestKill9KeepsData(t *testing.T) {
	args := []string{"-data-dir", t.TempDir(), "-listen-client", freeAddr(t), "-listen-peer", freeAddr(t)}
	p := startProc(t, args...)
	ep := p.ready(t)
	cli := client(t, ep)
	for _, k := range []string{"a", "b", "c"} {
		if _, err := cli.Put(ctx10s(t), k, "v-"+k); err != nil {
			t.Fatal(err)
		}
	}
	p.cmd.Process.Kill()
	if code := p.wait(t); code != -1 {
		t.Errorf("exit code %d, want -1 (killed)", code)
	}

	p = startProc(t, args...)
	if ep2 := p.ready(t); ep2 != ep {
		t.Errorf("restarted on %s, want %s", ep2, ep)
	}
	resp, err := cli.Get(ctx10s(t), "", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 3 {
		t.Fatalf("%d keys after kill -9 and restart, want 3", len(resp.Kvs))
	}
	for _, kv := range resp.Kvs {
		if string(kv.Value) != "v-"+string(kv.Key) {
			t.Errorf("%s = %s", kv.Key, kv.Value)
		}
	}
}

func TestParseFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		check   func(*testing.T, etcdembed.Config)
		wantErr string
	}{
		{"defaults", []string{"-data-dir", "/d"}, nil, func(t *testing.T, c etcdembed.Config) {
			if c.Dir != "/d" || c.ClientAddr != "127.0.0.1:2379" || c.PeerAddr != "127.0.0.1:2380" ||
				c.Name != "default" || c.ClusterState != "new" || c.ClusterToken != "trainmaster" || c.TLS != nil || c.UnsafeNoFsync {
				t.Errorf("%+v", c)
			}
		}, ""},
		{"environment", nil, map[string]string{
			"ETCD_EMBED_DATA_DIR": "/e", "ETCD_EMBED_LISTEN_CLIENT": "127.0.0.1:1", "ETCD_EMBED_UNSAFE_NO_FSYNC": "true",
			"ETCD_EMBED_QUOTA_BACKEND_BYTES": "1024", "ETCD_EMBED_AUTO_COMPACTION_RETENTION": "1000",
		}, func(t *testing.T, c etcdembed.Config) {
			if c.Dir != "/e" || c.ClientAddr != "127.0.0.1:1" || !c.UnsafeNoFsync || c.QuotaBackendBytes != 1024 || c.AutoCompactionRetention != "1000" {
				t.Errorf("%+v", c)
			}
		}, ""},
		{"tls", []string{"-data-dir", "/d", "-cert-file", "c", "-key-file", "k", "-trusted-ca-file", "ca", "-client-cert-auth"}, nil,
			func(t *testing.T, c etcdembed.Config) {
				if c.TLS == nil || *c.TLS != (etcdembed.TLSConfig{CertFile: "c", KeyFile: "k", TrustedCAFile: "ca", ClientCertAuth: true}) {
					t.Errorf("TLS %+v", c.TLS)
				}
			}, ""},
		{"cluster", []string{"-data-dir", "/d", "-name", "m1", "-initial-cluster", "m0=http://127.0.0.1:1,m1=http://127.0.0.1:2", "-initial-cluster-state", "existing"}, nil,
			func(t *testing.T, c etcdembed.Config) {
				if c.Name != "m1" || c.InitialCluster != "m0=http://127.0.0.1:1,m1=http://127.0.0.1:2" || c.ClusterState != "existing" {
					t.Errorf("%+v", c)
				}
			}, ""},
		{"no data dir", nil, nil, nil, "-data-dir is required"},
		{"cert without key", []string{"-data-dir", "/d", "-cert-file", "c"}, nil, nil, "-key-file"},
		{"client auth without CA", []string{"-data-dir", "/d", "-cert-file", "c", "-key-file", "k", "-client-cert-auth"}, nil, nil, "-trusted-ca-file"},
		{"arguments", []string{"-data-dir", "/d", "extra"}, nil, nil, "unexpected arguments"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			c, err := parseFlags(tc.args, io.Discard)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c)
		})
	}
}
