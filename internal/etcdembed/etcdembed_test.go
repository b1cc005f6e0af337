package etcdembed_test

import (
	"context"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/trainmaster/master/internal/etcdembed"
	"github.com/trainmaster/master/internal/etcdembed/etcdtest"
)

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func start(t *testing.T, cfg etcdembed.Config) *etcdembed.Server {
	t.Helper()
	begin := time.Now()
	s, err := etcdembed.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%v ready in %v", s, time.Since(begin).Round(time.Millisecond))
	t.Cleanup(s.Close)
	return s
}

func put(t *testing.T, cli *clientv3.Client, key, val string) {
	t.Helper()
	if _, err := cli.Put(ctxT(t, 10*time.Second), key, val); err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
}

func get(t *testing.T, cli *clientv3.Client, key string) string {
	t.Helper()
	resp, err := cli.Get(ctxT(t, 10*time.Second), key)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	if len(resp.Kvs) != 1 {
		t.Fatalf("get %s: %d keys", key, len(resp.Kvs))
	}
	return string(resp.Kvs[0].Value)
}

func TestDefaultsAreLoopback(t *testing.T) {
	s := start(t, etcdembed.Config{Dir: t.TempDir(), UnsafeNoFsync: true})
	urls := append(s.Endpoints(), s.PeerURL())
	if len(urls) != 2 {
		t.Fatalf("urls %v, want one endpoint and one peer URL", urls)
	}
	for _, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		host, port, err := net.SplitHostPort(u.Host)
		if err != nil {
			t.Fatal(err)
		}
		if u.Scheme != "http" || host != "127.0.0.1" || port == "0" {
			t.Errorf("URL %s: want http://127.0.0.1:<free port>", raw)
		}
	}
	if got, want := s.Config().InitialCluster, "default="+s.PeerURL(); got != want {
		t.Errorf("InitialCluster %q, want %q", got, want)
	}
}

func TestRestartKeepsData(t *testing.T) {
	dir := t.TempDir()
	cfg := etcdembed.Config{Name: "keeper", Dir: dir, UnsafeNoFsync: true}

	s := start(t, cfg)
	cli := etcdtest.NewClient(t, s.Endpoints())
	put(t, cli, "k", "v1")
	cli.Close()
	s.Close()

	// Same dir, new ports: the member rejoins its one-member cluster.
	s = start(t, cfg)
	cli = etcdtest.NewClient(t, s.Endpoints())
	if got := get(t, cli, "k"); got != "v1" {
		t.Errorf("after restart k = %q, want v1", got)
	}
}

func TestStartErrors(t *testing.T) {
	running := start(t, etcdembed.Config{Name: "first", Dir: t.TempDir(), UnsafeNoFsync: true})
	clientAddr := strings.TrimPrefix(running.Endpoints()[0], "http://")
	peerAddr := strings.TrimPrefix(running.PeerURL(), "http://")

	tests := []struct {
		name string
		cfg  etcdembed.Config
		want []string // substrings of the error
	}{
		{"no dir", etcdembed.Config{}, []string{"Dir", "required"}},
		{"client port taken",
			etcdembed.Config{Dir: t.TempDir(), ClientAddr: clientAddr},
			[]string{clientAddr, "address already in use", "data dir"}},
		{"peer port taken",
			etcdembed.Config{Dir: t.TempDir(), PeerAddr: peerAddr},
			[]string{peerAddr, "address already in use"}},
		{"data dir in use",
			etcdembed.Config{Dir: running.Config().Dir},
			[]string{running.Config().Dir, "in use by another etcd member"}},
		{"not in initial cluster",
			etcdembed.Config{Name: "b", Dir: t.TempDir(), InitialCluster: "a=http://127.0.0.1:1"},
			[]string{`no entry for member "b"`}},
		{"bad cluster state",
			etcdembed.Config{Dir: t.TempDir(), ClusterState: "old"},
			[]string{`ClusterState "old"`}},
		{"data dir is a file",
			etcdembed.Config{Dir: filepath.Join(running.Config().Dir, "member", "snap", "db", "x")},
			[]string{"not a directory"}},
		{"no quorum",
			etcdembed.Config{Name: "a", Dir: t.TempDir(), ReadyTimeout: 500 * time.Millisecond,
				InitialCluster: "a=http://127.0.0.1:0,b=http://127.0.0.1:1"},
			[]string{"not ready after 500ms", "quorum"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.UnsafeNoFsync = true
			if tc.cfg.InitialCluster != "" && strings.Contains(tc.cfg.InitialCluster, ":0,") {
				free, err := etcdembed.FreeLoopbackAddr()
				if err != nil {
					t.Fatal(err)
				}
				tc.cfg.InitialCluster = strings.Replace(tc.cfg.InitialCluster, "127.0.0.1:0", free, 1)
			}
			s, err := etcdembed.Start(context.Background(), tc.cfg)
			if err == nil {
				s.Close()
				t.Fatal("started, want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
	// The running member is unharmed.
	cli := etcdtest.NewClient(t, running.Endpoints())
	put(t, cli, "still", "here")
}

func TestThreeMembers(t *testing.T) {
	begin := time.Now()
	srvs, _ := etcdtest.StartCluster(t, 3)
	t.Logf("3 members ready in %v", time.Since(begin).Round(time.Millisecond))

	clients := make([]*clientv3.Client, len(srvs))
	for i, s := range srvs {
		clients[i] = etcdtest.NewClient(t, s.Endpoints())
	}
	resp, err := clients[0].MemberList(ctxT(t, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Members) != 3 {
		t.Fatalf("%d members, want 3", len(resp.Members))
	}
	for i := range clients {
		j := (i + 1) % len(clients)
		key := "from-" + srvs[i].Name()
		put(t, clients[i], key, srvs[i].Name())
		if got := get(t, clients[j], key); got != srvs[i].Name() {
			t.Errorf("%s via %s = %q, want %q", key, srvs[j].Name(), got, srvs[i].Name())
		}
	}

	// One member gone, two of three still make a quorum.
	srvs[2].Close()
	put(t, clients[0], "after", "close")
	if got := get(t, clients[1], "after"); got != "close" {
		t.Errorf("after = %q", got)
	}
}

func TestTLSClientCertAuth(t *testing.T) {
	certs := etcdtest.GenerateCerts(t)
	srv, cli := etcdtest.Start(t, etcdtest.WithTLS(certs))
	if ep := srv.Endpoints()[0]; !strings.HasPrefix(ep, "https://127.0.0.1:") {
		t.Fatalf("endpoint %s, want https://127.0.0.1:...", ep)
	}
	put(t, cli, "tls", "ok")

	tests := []struct {
		name string
		cfg  func(*clientv3.Config)
		ok   bool
	}{
		{"client cert", func(*clientv3.Config) {}, true},
		{"no client cert", func(c *clientv3.Config) { c.TLS = etcdtest.ClientTLSNoCert(t, certs) }, false},
		{"no TLS", func(c *clientv3.Config) { c.TLS = nil }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := etcdtest.ClientConfig(t, srv.Endpoints(), etcdtest.WithTLS(certs))
			tc.cfg(&cfg)
			c := etcdtest.NewClientConfig(t, cfg)
			_, err := c.Get(ctxT(t, time.Second), "tls")
			if tc.ok && err != nil {
				t.Errorf("get: %v", err)
			}
			if !tc.ok && err == nil {
				t.Error("get succeeded, want it refused")
			}
		})
	}
}

func TestAuth(t *testing.T) {
	srv, root := etcdtest.Start(t)
	etcdtest.EnableAuth(t, root, "trainer", "s3cret")

	tests := []struct {
		name, user, password string
		ok                   bool
	}{
		{"no password", "", "", false},
		{"wrong password", "trainer", "guess", false},
		{"user", "trainer", "s3cret", true},
		{"root", "root", "s3cret", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := etcdtest.ClientConfig(t, srv.Endpoints())
			cfg.Username, cfg.Password = tc.user, tc.password
			cli, err := clientv3.New(cfg)
			if err == nil {
				t.Cleanup(func() { cli.Close() })
				_, err = cli.Put(ctxT(t, 5*time.Second), "auth/"+tc.name, "x")
			}
			if tc.ok && err != nil {
				t.Errorf("put: %v", err)
			}
			if !tc.ok && err == nil {
				t.Error("put succeeded, want it refused")
			}
			t.Logf("err: %v", err)
		})
	}
}

func TestCloseTwiceAndConcurrently(t *testing.T) {
	s, err := etcdembed.Start(context.Background(), etcdembed.Config{Dir: t.TempDir(), UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.Close()
		}()
	}
	wg.Wait()
	s.Close()
	select {
	case err := <-s.Err():
		t.Errorf("Err after Close: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	// The data dir is free again.
	s2 := start(t, s.Config())
	s2.Close()
}

func TestErrReportsStop(t *testing.T) {
	s := start(t, etcdembed.Config{Dir: t.TempDir(), UnsafeNoFsync: true})
	s.Etcd().Server.HardStop()
	select {
	case err := <-s.Err():
		if !strings.Contains(err.Error(), "stopped") {
			t.Errorf("Err: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no error after HardStop")
	}
}

func TestStartHonoursContext(t *testing.T) {
	peer, err := etcdembed.FreeLoopbackAddr()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	begin := time.Now()
	// Two of two members needed, only one runs: never ready.
	_, err = etcdembed.Start(ctx, etcdembed.Config{
		Name: "a", Dir: t.TempDir(), UnsafeNoFsync: true,
		InitialCluster: "a=http://" + peer + ",b=http://127.0.0.1:1",
	})
	if err == nil || !strings.Contains(err.Error(), "deadline exceeded") {
		t.Errorf("err %v, want deadline exceeded", err)
	}
	if d := time.Since(begin); d > 5*time.Second {
		t.Errorf("Start took %v after a 300ms context", d)
	}
}
