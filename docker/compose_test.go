//go:build compose

// Package docker holds the container image's and the compose cluster's
// files; this test, run by `make compose-test` (build tag compose), brings
// the cluster of compose.yaml up with compose.test.yaml on top, kills the
// leading master's container in the middle of a pass, and checks that the
// job finishes with every record of every pass, then that nothing of it is
// left behind.
package docker

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/trainmaster/master/go/client"
)

// The cluster of compose.test.yaml: its loopback ports, its dataset (as
// compose.yaml's dataset service writes it) and its passes.
const (
	records = 20000
	passes  = 3
)

var (
	statusPages = map[string]string{"test-master-a": "http://127.0.0.1:31991", "test-master-b": "http://127.0.0.1:31992"}
	ports       = []string{"31791", "31792", "31793", "31801", "31802", "31803", "31881", "31882", "31991", "31992"}
	trainers    = []string{"trainer-1", "trainer-2", "trainer-3", "trainer-4"}
)

// compose runs docker-compose on the project's files.
type compose struct {
	t       *testing.T
	project string
	image   string
}

func (c compose) run(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "docker-compose", append([]string{"-p", c.project, "-f", "compose.yaml", "-f", "compose.test.yaml"}, args...)...)
	cmd.Env = append(os.Environ(), "IMAGE="+c.image)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func (c compose) must(ctx context.Context, args ...string) string {
	c.t.Helper()
	out, err := c.run(ctx, args...)
	if err != nil {
		c.t.Fatalf("docker-compose %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// container returns the id of a service's container.
func (c compose) container(ctx context.Context, service string) string {
	c.t.Helper()
	id := strings.TrimSpace(c.must(ctx, "ps", "-q", service))
	if id == "" {
		c.t.Fatalf("no container of %s", service)
	}
	return id
}

func docker(ctx context.Context, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, "docker", args...).CombinedOutput()
	return string(out), err
}

func TestComposeClusterSurvivesLosingItsLeader(t *testing.T) {
	image := os.Getenv("IMAGE")
	if image == "" {
		t.Fatal("IMAGE is not set: run `make compose-test`, which builds the image and sets it")
	}
	for _, port := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:"+port)
		if err != nil {
			t.Fatalf("port %s of compose.test.yaml is taken: %v", port, err)
		}
		l.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c := compose{t: t, project: fmt.Sprintf("tmtest%d", os.Getpid()), image: image}
	t.Cleanup(func() { c.down(t) })
	c.must(ctx, "up", "-d", "--scale", "master-a=0", "--scale", "master-b=0")

	leader := awaitLeader(t, ctx, "")
	for st := awaitJob(t, ctx, leader); st.Job.Pass == 0 && st.Job.Done < 10; st = awaitJob(t, ctx, leader) {
		time.Sleep(50 * time.Millisecond)
	}
	id := c.container(ctx, leader)
	st := awaitJob(t, ctx, leader)
	if out, err := docker(ctx, "kill", id); err != nil {
		t.Fatalf("docker kill %s: %v\n%s", leader, err, out)
	}
	killed := time.Now()
	t.Logf("killed %s, the leader, at pass %d with %d tasks done", leader, st.Job.Pass, st.Job.Done)
	successor := awaitLeader(t, ctx, leader)
	t.Logf("%s leads %v after the kill", successor, time.Since(killed).Round(time.Millisecond))
	if st.Job.AllDone {
		t.Fatal("the job was over before the kill")
	}

	sums := map[int]map[int]client.Digest{} // pass -> task -> digest of the task's records
	for _, trainer := range trainers {
		id := c.container(ctx, trainer)
		out, err := docker(ctx, "wait", id)
		if err != nil || strings.TrimSpace(out) != "0" {
			logs, _ := c.run(ctx, "logs", "--no-color", "--tail", "20", trainer)
			t.Fatalf("%s exited %q (%v):\n%s", trainer, strings.TrimSpace(out), err, logs)
		}
		logs, err := docker(ctx, "logs", id)
		if err != nil {
			t.Fatalf("docker logs %s: %v", trainer, err)
		}
		if err := addTasks(sums, logs); err != nil {
			t.Fatalf("%s: %v", trainer, err)
		}
	}
	var want client.Digest
	for i := range records {
		want.Add(fmt.Appendf(nil, "record %08d", i))
	}
	for pass := range passes {
		var got client.Digest
		for _, d := range sums[pass] {
			got.Combine(d)
		}
		if got != want {
			t.Errorf("pass %d: the trainers consumed %d tasks: %d records, digest %v; want every record once: %d records, digest %v",
				pass, len(sums[pass]), got.Records, got, want.Records, want)
		}
	}
	if len(sums) != passes {
		t.Errorf("the trainers consumed tasks of %d passes, want %d", len(sums), passes)
	}
}

// addTasks adds the tasks a trainer consumed, from its JSON lines (one a
// task, one a pass; cmd/trainer -json), to sums: a task consumed by two
// trainers (handed out again after the failover) counts once.
func addTasks(sums map[int]map[int]client.Digest, logs string) error {
	lines := bufio.NewScanner(strings.NewReader(logs))
	for lines.Scan() {
		var l struct {
			Pass, From int
			Task       *int
			Records    int64
			Bytes      int64
			Digest     string
		}
		if !strings.HasPrefix(lines.Text(), "{") {
			continue // the client's log
		}
		if err := json.Unmarshal(lines.Bytes(), &l); err != nil {
			return fmt.Errorf("line %q: %w", lines.Text(), err)
		}
		if l.Task == nil {
			continue // a pass's line
		}
		if l.From != 0 {
			return fmt.Errorf("task %d of pass %d consumed from %d, though trainers report no progress", *l.Task, l.Pass, l.From)
		}
		var sum uint64
		if _, err := fmt.Sscanf(l.Digest, "%x", &sum); err != nil {
			return fmt.Errorf("line %q: %w", lines.Text(), err)
		}
		if sums[l.Pass] == nil {
			sums[l.Pass] = map[int]client.Digest{}
		}
		sums[l.Pass][*l.Task] = client.Digest{Records: l.Records, Bytes: l.Bytes, Sum: sum}
	}
	return lines.Err()
}

// awaitLeader returns the master whose /readyz says it leads, other than
// not.
func awaitLeader(t *testing.T, ctx context.Context, not string) string {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		for name, page := range statusPages {
			if name == not {
				continue
			}
			resp, err := get(ctx, page+"/readyz")
			if err != nil {
				continue
			}
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return name
			}
		}
	}
	t.Fatalf("no master other than %q leads within 60 s", not)
	return ""
}

func get(ctx context.Context, url string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	return http.DefaultClient.Do(req)
}

// jobStatus is what the test reads of a status page's /status.json.
type jobStatus struct {
	Job *struct {
		Pass, Done int
		AllDone    bool `json:"all_done"`
	} `json:"job"`
}

// awaitJob returns the status of the leader's job once it has one.
func awaitJob(t *testing.T, ctx context.Context, master string) jobStatus {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		resp, err := get(ctx, statusPages[master]+"/status.json")
		if err != nil {
			continue
		}
		var st jobStatus
		err = json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		if err == nil && st.Job != nil {
			return st
		}
	}
	t.Fatalf("%s shows no job within 60 s", master)
	return jobStatus{}
}

// down tears the cluster down and checks that no container, network or
// volume of the project is left.
func (c compose) down(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if out, err := c.run(ctx, "down", "-v", "--remove-orphans", "--timeout", "5"); err != nil {
		t.Errorf("docker-compose down: %v\n%s", err, out)
	}
	label := "label=com.docker.compose.project=" + c.project
	for _, kind := range [][]string{{"ps", "-a", "-q", "--filter", label}, {"network", "ls", "-q", "--filter", label}, {"volume", "ls", "-q", "--filter", label}} {
		out, err := docker(ctx, kind...)
		if err != nil || strings.TrimSpace(out) != "" {
			t.Errorf("after down, docker %s: %q, %v; want nothing left", strings.Join(kind, " "), out, err)
		}
	}
}

// TestImage: the image holds every binary, has the master as its entry
// point and no shell, runs as a non-root user, and carries in a label the
// version `master -version` prints.
func TestImage(t *testing.T) {
	image := os.Getenv("IMAGE")
	if image == "" {
		t.Fatal("IMAGE is not set: run `make compose-test`, which builds the image and sets it")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	inspect := func(format string) string {
		out, err := docker(ctx, "image", "inspect", "-f", format, image)
		if err != nil {
			t.Fatalf("docker image inspect: %v\n%s", err, out)
		}
		return strings.TrimSpace(out)
	}
	if user := inspect("{{.Config.User}}"); user != "65532:65532" {
		t.Errorf("runs as %q, want 65532:65532", user)
	}
	if ep := inspect("{{json .Config.Entrypoint}}"); ep != `["/master"]` {
		t.Errorf("entry point %s, want the master", ep)
	}
	version, err := docker(ctx, "run", "--rm", "--network", "none", image, "-version")
	if err != nil {
		t.Fatalf("master -version: %v\n%s", err, version)
	}
	if label := inspect(`{{index .Config.Labels "org.opencontainers.image.version"}}`); label == "" || label != strings.TrimSpace(version) {
		t.Errorf("label version %q, master -version %q", label, strings.TrimSpace(version))
	}
	for _, bin := range []string{"/master", "/trainer", "/recordio", "/etcd-embed", "/demo", "/chaos"} {
		out, _ := docker(ctx, "run", "--rm", "--network", "none", "--entrypoint", bin, image, "-h")
		if !strings.Contains(out, "sage") {
			t.Errorf("%s -h printed no usage:\n%s", bin, out)
		}
	}
	if out, err := docker(ctx, "run", "--rm", "--network", "none", "--entrypoint", "/bin/sh", image, "-c", "true"); err == nil {
		t.Errorf("the image has a shell:\n%s", out)
	}
}
