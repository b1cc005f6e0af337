package etcdconn

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/namsral/flag"
	logtest "github.com/sirupsen/logrus/hooks/test"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/trainmaster/master/internal/etcdembed/etcdtest"
)

// TestRegister: the flags set the options, the environment (under the
// flag set's prefix) fills those not given on the command line, and an
// endpoint list drops blanks.
func TestRegister(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want Options
	}{
		{"defaults", nil, nil, Options{DialTimeout: 5 * time.Second}},
		{"flags", []string{"-endpoints", " http://a:2379, ,http://b:2379,", "-etcd-dial-timeout", "2s",
			"-etcd-cacert", "ca.pem", "-etcd-cert", "c.pem", "-etcd-key", "k.pem", "-etcd-user", "u", "-etcd-password", "p"}, nil,
			Options{Endpoints: []string{"http://a:2379", "http://b:2379"}, DialTimeout: 2 * time.Second, CACert: "ca.pem", Cert: "c.pem", Key: "k.pem", User: "u", Password: "p"}},
		{"environment", nil, map[string]string{"TESTCONN_ENDPOINTS": "http://e:2379", "TESTCONN_ETCD_DIAL_TIMEOUT": "3s",
			"TESTCONN_ETCD_USER": "trainer", "TESTCONN_ETCD_PASSWORD": "secret"},
			Options{Endpoints: []string{"http://e:2379"}, DialTimeout: 3 * time.Second, User: "trainer", Password: "secret"}},
		{"a flag wins over the environment", []string{"-etcd-user", "flag"}, map[string]string{"TESTCONN_ETCD_USER": "env"},
			Options{DialTimeout: 5 * time.Second, User: "flag"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			var o Options
			fs := flag.NewFlagSetWithEnvPrefix("test", "TESTCONN", flag.ContinueOnError)
			o.Register(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(o, tc.want) {
				t.Fatalf("options %+v, want %+v", o, tc.want)
			}
		})
	}
}

// TestTLS: no TLS flag means plain connections; a file that cannot be used
// is an error naming it.
func TestTLS(t *testing.T) {
	certs := etcdtest.GenerateCerts(t)
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.pem")
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name        string
		o           Options
		tls, client bool     // a configuration, with a client certificate
		names       []string // files the error names; none: no error
	}{
		{"none", Options{}, false, false, nil},
		{"CA only", Options{CACert: certs.CAFile}, true, false, nil},
		{"CA and client certificate", Options{CACert: certs.CAFile, Cert: certs.ClientCert, Key: certs.ClientKey}, true, true, nil},
		{"client certificate only", Options{Cert: certs.ClientCert, Key: certs.ClientKey}, true, true, nil},
		{"CA file missing", Options{CACert: missing}, false, false, []string{missing}},
		{"CA file not PEM", Options{CACert: notPEM}, false, false, []string{notPEM}},
		{"certificate missing", Options{CACert: certs.CAFile, Cert: missing, Key: certs.ClientKey}, false, false, []string{missing, certs.ClientKey}},
		{"key without certificate", Options{Key: certs.ClientKey}, false, false, []string{certs.ClientKey}},
		{"key of another certificate", Options{Cert: certs.ClientCert, Key: certs.ServerKey}, false, false, []string{certs.ClientCert, certs.ServerKey}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := tc.o.TLS()
			if len(tc.names) > 0 {
				if err == nil {
					t.Fatal("no error")
				}
				for _, name := range tc.names {
					if !strings.Contains(err.Error(), name) {
						t.Errorf("error %q does not name %s", err, name)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (cfg != nil) != tc.tls || (cfg != nil && (len(cfg.Certificates) == 1) != tc.client) {
				t.Fatalf("configuration %+v", cfg)
			}
		})
	}
}

// TestConnect: Connect reaches a real etcd, plain, over TLS with a client
// certificate, with a user and password, and as a user allowed only its
// own keys (which etcd refuses the health check's key).
func TestConnect(t *testing.T) {
	certs := etcdtest.GenerateCerts(t)
	for _, tc := range []struct {
		name string
		tls  bool
		auth func(t *testing.T, cli *clientv3.Client) (user, password string)
	}{
		{"plain", false, nil},
		{"TLS", true, nil},
		{"user and password", false, func(t *testing.T, cli *clientv3.Client) (string, string) {
			etcdtest.EnableAuth(t, cli, "trainer", "pw")
			return "trainer", "pw"
		}},
		{"TLS, user and password", true, func(t *testing.T, cli *clientv3.Client) (string, string) {
			etcdtest.EnableAuth(t, cli, "trainer", "pw")
			return "trainer", "pw"
		}},
		{"a user allowed only its own keys", false, func(t *testing.T, cli *clientv3.Client) (string, string) {
			if _, err := cli.RoleAdd(context.Background(), "job"); err != nil {
				t.Fatal(err)
			}
			if _, err := cli.RoleGrantPermission(context.Background(), "job", "/job/", clientv3.GetPrefixRangeEnd("/job/"), clientv3.PermissionType(clientv3.PermReadWrite)); err != nil {
				t.Fatal(err)
			}
			if _, err := cli.UserAdd(context.Background(), "jobuser", "pw"); err != nil {
				t.Fatal(err)
			}
			if _, err := cli.UserGrantRole(context.Background(), "jobuser", "job"); err != nil {
				t.Fatal(err)
			}
			etcdtest.EnableAuth(t, cli, "root", "rootpw")
			return "jobuser", "pw"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var opts []etcdtest.Option
			o := Options{DialTimeout: 10 * time.Second}
			if tc.tls {
				opts = append(opts, etcdtest.WithTLS(certs))
				o.CACert, o.Cert, o.Key = certs.CAFile, certs.ClientCert, certs.ClientKey
			}
			srv, admin := etcdtest.Start(t, opts...)
			o.Endpoints = srv.Endpoints()
			if tc.auth != nil {
				o.User, o.Password = tc.auth(t, admin)
			}
			log, hook := logtest.NewNullLogger()
			cli, err := o.Connect(context.Background(), log)
			if err != nil {
				t.Fatal(err)
			}
			defer cli.Close()
			if _, err := cli.Put(context.Background(), "/job/x", "1"); err != nil {
				t.Fatal(err)
			}
			if n := len(hook.AllEntries()); n != 0 {
				t.Fatalf("%d retries logged connecting to a running etcd: %v", n, hook.LastEntry().Data)
			}
		})
	}
}

// TestConnectRefused: a refused login is final, not retried until the
// dial timeout; an etcd that does not answer (nothing but a TCP listener,
// or TLS without the client certificate etcd requires) is given up after
// the dial timeout, retried meanwhile, with an error naming the endpoints.
func TestConnectRefused(t *testing.T) {
	certs := etcdtest.GenerateCerts(t)
	const dialTimeout = 1500 * time.Millisecond
	authSrv, authCli := etcdtest.Start(t)
	etcdtest.EnableAuth(t, authCli, "trainer", "pw")
	tlsSrv, _ := etcdtest.Start(t, etcdtest.WithTLS(certs))
	silent := silentListener(t)
	for _, tc := range []struct {
		name    string
		o       Options
		says    string
		retried bool
	}{
		{"wrong password", Options{Endpoints: authSrv.Endpoints(), User: "trainer", Password: "wrong", DialTimeout: 30 * time.Second},
			"authentication failed", false},
		{"unknown user", Options{Endpoints: authSrv.Endpoints(), User: "nobody", Password: "pw", DialTimeout: 30 * time.Second},
			"authentication failed", false},
		{"nothing answers", Options{Endpoints: []string{"http://" + silent}, DialTimeout: dialTimeout},
			"did not answer within 1.5s", true},
		{"no client certificate", Options{Endpoints: tlsSrv.Endpoints(), CACert: certs.CAFile, DialTimeout: dialTimeout},
			"did not answer within 1.5s", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log, hook := logtest.NewNullLogger()
			start := time.Now()
			cli, err := tc.o.Connect(context.Background(), log)
			took := time.Since(start)
			if err == nil {
				cli.Close()
				t.Fatal("connected")
			}
			for _, want := range append([]string{tc.says}, tc.o.Endpoints...) {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			retries := len(hook.AllEntries())
			if tc.retried {
				if retries == 0 || took < tc.o.DialTimeout {
					t.Errorf("gave up after %v and %d retries; want retries for %v", took, retries, tc.o.DialTimeout)
				}
				if took > tc.o.DialTimeout+5*time.Second {
					t.Errorf("gave up after %v, past the dial timeout of %v", took, tc.o.DialTimeout)
				}
			} else if retries != 0 || took > tc.o.DialTimeout/2 {
				t.Errorf("a refused login was retried %d times for %v", retries, took)
			}
		})
	}
}

// TestConnectStops: Connect without endpoints fails at once, and a
// cancelled context ends the retries.
func TestConnectStops(t *testing.T) {
	log, _ := logtest.NewNullLogger()
	if _, err := (Options{DialTimeout: time.Minute}).Connect(context.Background(), log); err == nil || !strings.Contains(err.Error(), "no etcd endpoints") {
		t.Fatalf("no endpoints: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	o := Options{Endpoints: []string{"http://" + silentListener(t)}, DialTimeout: time.Minute}
	start := time.Now()
	if _, err := o.Connect(ctx, log); err == nil || !strings.Contains(err.Error(), o.Endpoints[0]) {
		t.Fatalf("cancelled: %v", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("a cancelled Connect took %v", took)
	}
}

// silentListener accepts TCP connections on loopback and never answers;
// all is closed at the end of the test.
func silentListener(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			hold(&mu, &conns, c)
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
		closeAll(&mu, conns)
	})
	return l.Addr().String()
}

func hold(mu *sync.Mutex, conns *[]net.Conn, c net.Conn) {
	mu.Lock()
	defer mu.Unlock()
	*conns = append(*conns, c)
}

func closeAll(mu *sync.Mutex, conns []net.Conn) {
	mu.Lock()
	defer mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}
