package main

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/rpc"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/trainmaster/master/go/wire"
)

// Debian's prometheus package, which .ci/run installs.
const (
	prometheusBin = "/usr/bin/prometheus"
	promtoolBin   = "/usr/bin/promtool"
)

// debianTool returns path, a program of Debian's package pkg. When it is
// missing the test is skipped, but in CI (CI set), where .ci/run installs
// the package, it fails.
func debianTool(t *testing.T, path, pkg string) string {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%v: install Debian's %s", err, pkg)
		}
		t.Skipf("%s is missing: install Debian's %s to run this test", path, pkg)
	}
	return path
}

// scrapeJob is the scrape job doc/operations.md shows: every master of a
// training job, standbys too, with the token of their -token-file.
func scrapeJob(name string, targets []string, tokenFile string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  - job_name: %s\n    authorization:\n      credentials_file: %s\n    static_configs:\n      - targets:\n",
		name, tokenFile)
	for _, target := range targets {
		fmt.Fprintf(&b, "          - %s\n", target)
	}
	return b.String()
}

// TestPrometheusScrapesAJob runs Debian's Prometheus against the two masters
// of a real job (leader and standby, scraped every second with the scrape
// job of doc/operations.md and the rules of doc/alerts.yml) and a third,
// token-locked master of another namespace, lets it scrape while trainers
// make 3 passes with one task failing for good, and checks what its HTTP
// API answers against the job: the counters of finishes, records,
// failures and discards, the done queue and the pass the leader shows, the
// leader series of every master, the named trainers (tracked, no longer
// connected once done), a counter scraped mid-job that never went down,
// the discard alert firing alone, and every trainmaster_ metric listed in
// the document.
func TestPrometheusScrapesAJob(t *testing.T) {
	prometheus := debianTool(t, prometheusBin, "prometheus")
	const passes, failTask = 3, 5
	j := startObservedJob(t, "-passes", strconv.Itoa(passes), "-task-timeout-max", "1")
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("prometheus-scrape-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	locked := startMaster(t, "-endpoints", strings.Join(j.endpoints, ","), "-namespace", "/locked",
		"-http-addr", "127.0.0.1:0", "-token-file", tokenFile)
	lockedURL := locked.awaitDoor(30 * time.Second)
	resp, err := http.Get(lockedURL + "metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("GET %smetrics without the token: %s, want 401", lockedURL, resp.Status)
	}
	target := func(pageURL string) string { return strings.TrimSuffix(strings.TrimPrefix(pageURL, "http://"), "/") }
	leader, standby, lockedTarget := target(j.leaderURL()), target(j.standbyURL()), target(lockedURL)

	// The masters of the job run without a token: they ignore the header.
	rules, err := filepath.Abs("../../doc/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	config := fmt.Sprintf("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files:\n  - %s\nscrape_configs:\n%s%s",
		rules, scrapeJob("trainmaster", []string{target(j.urls[0]), target(j.urls[1])}, tokenFile),
		scrapeJob("trainmaster-locked", []string{lockedTarget}, tokenFile))
	prom := startPrometheus(t, prometheus, dir, config)

	up := prom.await("up", 60*time.Second, func(r []promSample) bool {
		return len(r) == 3 && !slices.ContainsFunc(r, func(s promSample) bool { return s.value() != 1 })
	})
	t.Logf("Prometheus at %s scrapes %v", prom.url, up)
	joinRendezvous(t, j.addr) // so that its gauges are exported, as the document lists them

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errs := j.train(ctx, 3, writeDataset(t, 4), 2*time.Millisecond, failTask)
	for range 3 {
		select {
		case err := <-errs:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(2 * time.Minute):
			t.Fatal("the trainers did not finish in 2 minutes")
		}
	}
	job := statusOf(t, j.leaderURL()).Job
	if job == nil || !job.AllDone || job.Pass != passes || job.Tasks != 20 || job.Records != 4000 {
		t.Fatalf("the leader's job after training: %+v", job)
	}

	// Every task but failTask is finished once a pass; failTask fails twice
	// (-task-timeout-max 1) and is discarded. Tasks are of equal size.
	finishes := passes * (job.Tasks - 1)
	inLeader := fmt.Sprintf(`{instance=%q}`, leader)
	for expr, want := range map[string]float64{
		"trainmaster_finishes_total" + inLeader:                           float64(finishes),
		"sum(trainmaster_trainer_tasks_total" + inLeader + ")":            float64(finishes),
		"trainmaster_records_done_total" + inLeader:                       float64(passes * (job.Records - job.Records/int64(job.Tasks))),
		"trainmaster_discards_total" + inLeader:                           passes,
		"trainmaster_failures_total" + inLeader:                           2 * passes,
		"sum(trainmaster_trainer_failures_total" + inLeader + ")":         2 * passes,
		"trainmaster_timeouts_total" + inLeader:                           0,
		`trainmaster_tasks{queue="done",instance="` + leader + `"}`:       float64(job.Done),
		"trainmaster_pass" + inLeader:                                     float64(job.Pass),
		"trainmaster_passes" + inLeader:                                   passes,
		fmt.Sprintf(`trainmaster_dispatches_total{instance=%q}`, standby): 0,
		// The trainers, done, are tracked but no longer connected, nor
		// stalled: the job is done.
		"trainmaster_trainers_tracked" + inLeader:                  3,
		"trainmaster_trainers" + inLeader:                          0,
		"trainmaster_trainers_stalled" + inLeader:                  0,
		"trainmaster_trainers_untracked" + inLeader:                0,
		"trainmaster_trainers_task_held_seconds_count" + inLeader:  0,
		"trainmaster_trainers_records_per_second_count" + inLeader: 0,
	} {
		prom.await(expr, 30*time.Second, func(r []promSample) bool { return len(r) == 1 && r[0].value() == want })
	}
	prom.await("trainmaster_leader", 30*time.Second, func(r []promSample) bool {
		leading := map[string]float64{}
		for _, s := range r {
			leading[s.Metric["instance"]] = s.value()
		}
		return len(r) == 3 && leading[leader] == 1 && leading[standby] == 0 && leading[lockedTarget] == 1
	})

	var names []string
	for _, s := range prom.query("trainmaster_trainer_tasks_total") {
		if s.Metric["instance"] != leader {
			t.Errorf("trainer series of a master that served none: %v", s.Metric)
		}
		names = append(names, s.Metric["trainer"])
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"trainer-0", "trainer-1", "trainer-2"}) {
		t.Errorf("trainers in trainmaster_trainer_tasks_total: %v", names)
	}

	// The counter as scraped: from 0 before the trainers, through the job,
	// to the end, never down.
	var seen []float64
	for _, s := range prom.query("trainmaster_finishes_total" + inLeader + "[10m]") {
		for _, v := range s.Values {
			seen = append(seen, sampleValue(v))
		}
	}
	if len(seen) < 3 || seen[0] != 0 || seen[len(seen)-1] != float64(finishes) || !slices.IsSorted(seen) ||
		!slices.ContainsFunc(seen, func(v float64) bool { return v > 0 && v < float64(finishes) }) {
		t.Errorf("trainmaster_finishes_total of the leader as scraped: %v; want from 0 up to %d, some in between", seen, finishes)
	}

	firing := prom.alerts(30*time.Second, func(a []promAlert) bool {
		return slices.ContainsFunc(a, func(a promAlert) bool {
			return a.Labels["alertname"] == "TrainmasterTasksDiscarded" && a.State == "firing"
		})
	})
	if len(firing) != 1 || firing[0].Labels["job"] != "trainmaster" {
		t.Errorf("alerts: %+v; want TrainmasterTasksDiscarded of job trainmaster alone", firing)
	}

	checkOperationsDoc(t, prom)
}

// checkOperationsDoc checks that doc/operations.md shows the scrape job
// this test uses, lists every trainmaster_ metric prom holds (a histogram
// by its base name) and names no other.
func checkOperationsDoc(t *testing.T, prom *prometheusServer) {
	t.Helper()
	doc := readDoc(t, "operations.md")
	if example := scrapeJob("trainmaster", []string{"master-a:8081", "master-b:8081"}, "/etc/prometheus/trainmaster.token"); !strings.Contains(doc, example) {
		t.Errorf("doc/operations.md does not show the scrape job this test uses:\n%s", example)
	}
	var names struct{ Data []string }
	getJSON(t, prom.url+"api/v1/label/__name__/values", &names)
	for _, name := range names.Data {
		if base := histogramSuffix.ReplaceAllString(name, ""); slices.Contains(names.Data, base+"_bucket") {
			name = base
		}
		if strings.HasPrefix(name, "trainmaster_") && !strings.Contains(doc, "`"+name+"`") {
			t.Errorf("doc/operations.md does not list %s", name)
		}
	}
	for _, name := range regexp.MustCompile(`trainmaster_[a-z][a-z_]*[a-z]`).FindAllString(doc, -1) {
		if !slices.Contains(names.Data, name) && !slices.Contains(names.Data, name+"_bucket") {
			t.Errorf("doc/operations.md names %s, which the masters do not export", name)
		}
	}
}

// histogramSuffix ends the names of a histogram's series.
var histogramSuffix = regexp.MustCompile(`_(bucket|sum|count)$`)

// readDoc returns the text of doc/name.
func readDoc(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "doc", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// prometheusServer is a Prometheus process and its HTTP API.
type prometheusServer struct {
	t   *testing.T
	url string // "http://127.0.0.1:PORT/"
}

// startPrometheus runs prometheus with config, its data and log in dir,
// on a free loopback port, and waits until it is ready. It is killed when
// the test ends; the end of its log is shown if the test failed.
func startPrometheus(t *testing.T, prometheus, dir, config string) *prometheusServer {
	t.Helper()
	configFile := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(configFile, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	logFile, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(prometheus, "--config.file="+configFile, "--storage.tsdb.path="+filepath.Join(dir, "tsdb"),
		"--web.listen-address="+addr)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		logFile.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logFile.Name())
			t.Logf("log of prometheus:\n%s\nits configuration:\n%s", lastLines(string(b), 30), config)
		}
	})
	p := &prometheusServer{t: t, url: "http://" + addr + "/"}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if resp, err := http.Get(p.url + "-/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		select {
		case <-exited:
			t.Fatalf("prometheus exited: %v", cmd.ProcessState)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("prometheus not ready after 60 s")
		}
	}
}

// promSample is a series of a query's answer: Value for an instant
// vector, Values for a range vector; each a pair [time, "value"].
type promSample struct {
	Metric map[string]string `json:"metric"`
	Value  []any             `json:"value"`
	Values [][]any           `json:"values"`
}

func (s promSample) value() float64 { return sampleValue(s.Value) }

// sampleValue is the value of a pair [time, "value"], NaN if it is none.
func sampleValue(pair []any) float64 {
	if len(pair) == 2 {
		if str, ok := pair[1].(string); ok {
			if v, err := strconv.ParseFloat(str, 64); err == nil {
				return v
			}
		}
	}
	return math.NaN()
}

// query returns the answer to an instant query of expr.
func (p *prometheusServer) query(expr string) []promSample {
	p.t.Helper()
	var answer struct {
		Status string
		Data   struct{ Result []promSample }
	}
	getJSON(p.t, p.url+"api/v1/query?query="+url.QueryEscape(expr), &answer)
	if answer.Status != "success" {
		p.t.Fatalf("query %s: status %q", expr, answer.Status)
	}
	return answer.Data.Result
}

// await queries expr until ok holds of the answer, and returns it.
func (p *prometheusServer) await(expr string, limit time.Duration, ok func([]promSample) bool) []promSample {
	p.t.Helper()
	for deadline := time.Now().Add(limit); ; time.Sleep(200 * time.Millisecond) {
		r := p.query(expr)
		if ok(r) {
			return r
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("Prometheus' answer to %s after %v: %+v", expr, limit, r)
		}
	}
}

// promAlert is an alert of /api/v1/alerts.
type promAlert struct {
	Labels map[string]string
	State  string // pending or firing
}

// alerts polls the alerts until ok holds of them, and returns them.
func (p *prometheusServer) alerts(limit time.Duration, ok func([]promAlert) bool) []promAlert {
	p.t.Helper()
	for deadline := time.Now().Add(limit); ; time.Sleep(200 * time.Millisecond) {
		var answer struct{ Data struct{ Alerts []promAlert } }
		getJSON(p.t, p.url+"api/v1/alerts", &answer)
		if ok(answer.Data.Alerts) {
			return answer.Data.Alerts
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("Prometheus' alerts after %v: %+v", limit, answer.Data.Alerts)
		}
	}
}

// joinRendezvous has a node join a rendezvous run of one node at the master
// at addr: the run's round completes at once.
func joinRendezvous(t *testing.T, addr string) {
	t.Helper()
	c, err := rpc.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var v wire.RendezvousView
	j := wire.RendezvousJoin{RendezvousPoll: wire.RendezvousPoll{Run: "job-1", Node: "node-a", Token: "t"}, MinNodes: 1, MaxNodes: 1, GraceMs: 600_000}
	if err := c.Call("Rendezvous.Join", j, &v); err != nil || !v.Complete {
		t.Fatalf("join a rendezvous run: %+v %v", v, err)
	}
}
