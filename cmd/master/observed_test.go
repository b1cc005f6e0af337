package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/trainmaster/master/go/client"
	"github.com/trainmaster/master/go/discovery"
	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/etcdembed/etcdtest"
	"github.com/trainmaster/master/internal/statusapi"
)

// observedJob is a job watched as people watch one: two masters on a test
// etcd, each with its status page and metrics on a loopback port
// (-http-addr), one leading and one standing by.
type observedJob struct {
	t         *testing.T
	endpoints []string
	masters   [2]*proc
	urls      [2]string // status page of each master, "http://127.0.0.1:PORT/"
	lead      int       // index of the master that serves first
	addr      string    // its trainer port
}

// startObservedJob starts the two masters with args and waits until one
// serves trainers. Their lock's TTL is 10 s, so that a loaded machine does
// not move the leadership mid-test.
func startObservedJob(t *testing.T, args ...string) *observedJob {
	t.Helper()
	srv, _ := etcdtest.Start(t)
	j := &observedJob{t: t, endpoints: srv.Endpoints()}
	for i := range j.masters {
		j.masters[i] = startMaster(t, append([]string{"-endpoints", strings.Join(j.endpoints, ","), "-ttl", "10",
			"-http-addr", "127.0.0.1:0"}, args...)...)
		j.urls[i] = j.masters[i].awaitDoor(30 * time.Second)
	}
	select {
	case j.addr = <-j.masters[0].serving:
		j.lead = 0
	case j.addr = <-j.masters[1].serving:
		j.lead = 1
	case <-time.After(30 * time.Second):
		t.Fatal("no master serving after 30 s")
	}
	return j
}

// leaderURL and standbyURL are the status pages of the leader and the
// standby.
func (j *observedJob) leaderURL() string  { return j.urls[j.lead] }
func (j *observedJob) standbyURL() string { return j.urls[1-j.lead] }

// train runs n in-process trainers named "trainer-0" ... that find the
// master through etcd, report pattern and consume every pass, sleeping
// delay per record; each reports task failTask failed whenever it gets it
// (-1: never). The channel yields each trainer's outcome.
func (j *observedJob) train(ctx context.Context, n int, pattern string, delay time.Duration, failTask int) chan error {
	errs := make(chan error, n)
	for i := range n {
		go func() { errs <- j.trainer(ctx, i, pattern, delay, failTask) }()
	}
	return errs
}

func (j *observedJob) trainer(ctx context.Context, i int, pattern string, delay time.Duration, failTask int) error {
	cli, err := clientv3.New(clientv3.Config{Endpoints: j.endpoints, DialTimeout: 5 * time.Second})
	if err != nil {
		return err
	}
	defer cli.Close()
	cfg := client.Config{Name: fmt.Sprintf("trainer-%d", i), MinBackoff: 20 * time.Millisecond, MaxBackoff: 300 * time.Millisecond,
		CallTimeout: 5 * time.Second}
	if failTask >= 0 {
		cfg.Inject = func(t wire.Task) error {
			if t.Index == failTask {
				return fmt.Errorf("injected failure of task %d", t.Index)
			}
			return nil
		}
	}
	c := client.New(discovery.NewResolver(cli, ""), cfg)
	defer c.Close()
	if err := c.ReportDataset(ctx, []string{pattern}); err != nil {
		return fmt.Errorf("trainer %d: %w", i, err)
	}
	for _, err := range c.Records(ctx) {
		if err != nil {
			return fmt.Errorf("trainer %d: %w", i, err)
		}
		time.Sleep(delay)
	}
	return nil
}

// getJSON decodes the JSON body of url into v, and fails the test on any
// answer but 200.
func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

// statusOf returns the status a master's page shows (/status.json).
func statusOf(t *testing.T, pageURL string) statusapi.Status {
	t.Helper()
	st, err := statusapi.NewClient(statusapi.ClientConfig{}).Status(context.Background(), hostPort(pageURL))
	if err != nil {
		t.Fatal(err)
	}
	return st
}
