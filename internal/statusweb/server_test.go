package statusweb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/trainmaster/master/go/discovery"
	"github.com/trainmaster/master/go/recordio"
	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/etcdembed/etcdtest"
	"github.com/trainmaster/master/internal/master"
	"github.com/trainmaster/master/internal/monitor"
	"github.com/trainmaster/master/internal/statusapi"
	"github.com/trainmaster/master/internal/trainerport/porttest"
)

// serveDoor serves a side door of cfg on a loopback port until the test
// ends, and returns its base URL.
func serveDoor(t *testing.T, cfg Config) string {
	t.Helper()
	if cfg.Monitor == nil {
		cfg.Monitor = monitor.New(monitor.Config{})
	}
	log := logrus.New()
	log.SetOutput(io.Discard)
	cfg.Log = log
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, lis) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	scheme := "http"
	if cfg.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + lis.Addr().String()
}

// fetch GETs url with the client and an optional bearer token and returns
// the status code and body.
func fetch(t *testing.T, c *http.Client, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// statusOf fetches the /status.json of the door at base with statusapi's
// client, and fails the test on any error.
func statusOf(t *testing.T, base string) statusapi.Status {
	t.Helper()
	st, err := statusapi.NewClient(statusapi.ClientConfig{}).Status(context.Background(), strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestProbesAndToken: the probes answer without the token, and say
// whether this master leads; every other path wants the token.
func TestProbesAndToken(t *testing.T) {
	mon := monitor.New(monitor.Config{})
	base := serveDoor(t, Config{Monitor: mon, Token: "s3cret"})
	c := http.DefaultClient
	for _, tc := range []struct {
		path, token string
		code        int
		body        string
	}{
		{"/healthz", "", 200, "ok"},
		{"/readyz", "", 503, "standing by"},
		{"/metrics", "", 401, "the master's token is needed"},
		{"/metrics", "wrong", 401, "the master's token is needed"},
		{"/metrics", "s3cret", 200, "trainmaster_leader 0"},
		{"/status.json", "", 401, "token"},
		{"/status.json", "s3cret", 200, `"leading": false`},
		{"/", "", 401, "token"},
		{"/", "s3cret", 200, "<"},
		{"/nothing", "s3cret", 404, ""},
	} {
		code, body := fetch(t, c, base+tc.path, tc.token)
		if code != tc.code || !strings.Contains(body, tc.body) {
			t.Errorf("GET %s with token %q: %d %.80q, want %d and %q", tc.path, tc.token, code, body, tc.code, tc.body)
		}
	}
	svc, err := master.New(master.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	mon.Lead(svc)
	if code, body := fetch(t, c, base+"/readyz", ""); code != 200 || body != "leading\n" {
		t.Errorf("readyz of a leader: %d %q", code, body)
	}
	if code, body := fetch(t, c, base+"/metrics", "s3cret"); code != 200 || !strings.Contains(body, "\ntrainmaster_leader 1\n") {
		t.Errorf("metrics of a leader: %d %q", code, body)
	}
}

// TestClientCertificates: with client CAs, the data paths want a verified
// client certificate, the probes do not.
func TestClientCertificates(t *testing.T) {
	certs := etcdtest.GenerateCerts(t)
	port := porttest.TLS(t, certs.ServerCert, certs.ServerKey, certs.CAFile)
	base := serveDoor(t, Config{TLS: ServerTLS(port)})
	withCert := &http.Client{Transport: &http.Transport{TLSClientConfig: etcdtest.ClientTLS(t, certs)}}
	noCert := &http.Client{Transport: &http.Transport{TLSClientConfig: etcdtest.ClientTLSNoCert(t, certs)}}
	for _, tc := range []struct {
		c    *http.Client
		path string
		code int
	}{
		{noCert, "/healthz", 200}, {noCert, "/readyz", 503}, {noCert, "/metrics", 403}, {noCert, "/status.json", 403},
		{withCert, "/metrics", 200}, {withCert, "/status.json", 200}, {withCert, "/", 200},
	} {
		if code, body := fetch(t, tc.c, base+tc.path, ""); code != tc.code {
			t.Errorf("GET %s: %d %q, want %d", tc.path, code, body, tc.code)
		}
	}
	if code, body := fetch(t, http.DefaultClient, strings.Replace(base, "https", "http", 1)+"/metrics", ""); code != 400 || !strings.Contains(body, "HTTPS") {
		t.Errorf("plain HTTP on the TLS door: %d %q", code, body)
	}
}

// TestMastersInStatus: /status.json lists the masters read from etcd, or
// says why they could not be read, within its deadline.
func TestMastersInStatus(t *testing.T) {
	masters := []discovery.Master{{Candidate: discovery.Candidate{Host: "h1", PID: 1, HTTP: "127.0.0.1:1"}, Key: "/m/1", Leading: true}}
	for _, tc := range []struct {
		name  string
		read  func(ctx context.Context) ([]discovery.Master, error)
		check func(statusapi.Status) bool
	}{
		{"read", func(context.Context) ([]discovery.Master, error) { return masters, nil },
			func(st statusapi.Status) bool { return len(st.Masters) == 1 && st.Masters[0].HTTP == "127.0.0.1:1" }},
		{"failed", func(context.Context) ([]discovery.Master, error) { return nil, errors.New("etcd down") },
			func(st statusapi.Status) bool { return len(st.Masters) == 0 && st.MastersError == "etcd down" }},
		{"hung", func(ctx context.Context) ([]discovery.Master, error) { <-ctx.Done(); return nil, ctx.Err() },
			func(st statusapi.Status) bool { return st.MastersError == context.DeadlineExceeded.Error() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := serveDoor(t, Config{Masters: tc.read})
			start := time.Now()
			if st := statusOf(t, base); !tc.check(st) {
				t.Errorf("%+v", st)
			}
			if took := time.Since(start); took > mastersTimeout+5*time.Second {
				t.Errorf("took %v", took)
			}
		})
	}
}

// TestDatasetsThroughTheDoor: a leader serving train and an index-range
// eval dataset shows eval beside the job in /status.json, in the
// per-dataset metrics and in the page's datasets table.
func TestDatasetsThroughTheDoor(t *testing.T) {
	path := filepath.Join(t.TempDir(), "data.recordio")
	record := func(i int) []byte { return fmt.Appendf(nil, "record %02d", i) }
	if err := recordio.WriteFile(path, 12, record, recordio.WithMaxChunkBytes(3*len(record(0)))); err != nil {
		t.Fatal(err)
	}
	mon := monitor.New(monitor.Config{})
	log := logrus.New()
	log.SetOutput(io.Discard)
	svc, err := master.New(master.Config{ChunksPerTask: 1, Observer: mon, Log: log}) // 4 tasks of 3 records
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	ctx := context.Background()
	if err := svc.ReportDataset(ctx, []string{path}); err != nil {
		t.Fatal(err)
	}
	if err := svc.DeclareDataset(ctx, wire.Dataset{Name: "eval", Records: 25, RecordsPerTask: 10}); err != nil {
		t.Fatal(err)
	}
	mon.Lead(svc)
	if _, err := svc.GetTask(ctx, wire.Task{Dataset: "eval", Trainer: "evaluator"}); err != nil {
		t.Fatal(err)
	}
	base := serveDoor(t, Config{Monitor: mon})

	st := statusOf(t, base)
	if st.Job == nil || st.Job.Name != "train" || st.Job.Tasks != 4 || st.Job.Todo != 4 || len(st.Datasets) != 1 {
		t.Fatalf("/status.json: job %+v, datasets %+v", st.Job, st.Datasets)
	}
	if d := st.Datasets[0]; d.Name != "eval" || d.RecordsPerTask != 10 || d.Records != 25 || d.Tasks != 3 || d.Todo != 2 || d.Pending != 1 {
		t.Errorf("/status.json: eval %+v", d)
	}
	if tr := st.Trainers; len(tr) != 1 || tr[0].Task == nil || tr[0].Task.Dataset != "eval" {
		t.Errorf("/status.json: trainers %+v", tr)
	}

	_, metrics := fetch(t, http.DefaultClient, base+"/metrics", "")
	for _, want := range []string{
		`trainmaster_tasks{queue="todo"} 4`,
		`trainmaster_dataset_queue_tasks{dataset="eval",queue="pending"} 1`,
		`trainmaster_dataset_queue_tasks{dataset="eval",queue="todo"} 2`,
		`trainmaster_dataset_queue_tasks{dataset="train",queue="todo"} 4`,
		`trainmaster_dataset_pass{dataset="eval"} 0`,
		`trainmaster_dataset_passes{dataset="eval"} 1`,
		`trainmaster_dataset_round{dataset="eval"} 0`,
		`trainmaster_dataset_pass_records_done{dataset="train"} 0`,
	} {
		if !strings.Contains(metrics, "\n"+want+"\n") {
			t.Errorf("/metrics has no %q", want)
		}
	}

	resp, err := http.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, doc := parsePage(t, resp.Body)
	for _, c := range []check{
		sets("train: 1 file in tasks of 1 chunk | 1 | 1 of 1 | 4 0 0 0 | 0 of 12 · 0% | 0",
			"eval: index range of 25 records in tasks of 10 | 1 | 1 of 1 | 2 1 0 0 | 0 of 25 · 0% | 0"),
		hasText("#trainers", "evaluator", "eval task 0"),
	} {
		c(t, "", doc)
	}
}
