package watch

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trainmaster/master/go/discovery"
	"github.com/trainmaster/master/internal/statusapi"
)

// page serves the statuses of answers in turn, the last one again and
// again; a nil status answers 500.
func page(t *testing.T, answers ...*statusapi.Status) string {
	t.Helper()
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		st := answers[0]
		if len(answers) > 1 {
			answers = answers[1:]
		}
		if st == nil {
			http.Error(w, "trouble", http.StatusInternalServerError)
			return
		}
		_ = json.NewEncoder(w).Encode(st)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// TestRunFollowsTheLeader: without an address the watch waits for a
// leader, polls its page, looks for the leader again when that master
// stands by or does not answer, and ends after the last pass.
func TestRunFollowsTheLeader(t *testing.T) {
	running := watchStatus()
	running.Masters, running.Trainers = nil, nil
	standby := statusapi.Status{Time: watchT0}
	done := watchStatus()
	done.Job.AllDone, done.Job.Pass, done.Job.Failed = true, 3, 2
	a, b := page(t, &running, &standby), page(t, nil, &done)
	leaders := [][]discovery.Master{nil, {{Candidate: discovery.Candidate{HTTP: a}, Leading: true}},
		{{Candidate: discovery.Candidate{HTTP: b}, Leading: true}}}
	var out bytes.Buffer
	err := Run(context.Background(), Config{Pages: statusapi.NewClient(statusapi.ClientConfig{}), Namespace: "/jobs/w",
		Interval: time.Millisecond, Out: &out,
		Masters: func(context.Context) ([]discovery.Master, error) {
			m := leaders[0]
			if len(leaders) > 1 {
				leaders = leaders[1:]
			}
			return m, nil
		}})
	want := strings.Join([]string{
		`no master leads the job in namespace "/jobs/w" yet; waiting`,
		"pass 2/3 42% | 1234 rec/s | eta pass 8s job 1m05s | todo 20 pending 6 done 26 failed 0 | leader unknown",
		"the master at " + a + " stands by now; looking for the leader in etcd",
		"the master at " + b + " does not answer (the status page http://" + b + "/status.json answered 500 Internal Server Error); looking for the leader in etcd",
		"all 3 passes done: 52 tasks, 16000 records a pass; 2 tasks discarded in the last pass",
	}, "\n") + "\n"
	if err != nil || out.String() != want {
		t.Errorf("error %v, output:\n%s\nwant:\n%s", err, out.String(), want)
	}
}

// TestRunEnds: a leader without a page ends the watch with its error at
// once; the end of its context ends it without one.
func TestRunEnds(t *testing.T) {
	noPage := func(context.Context) ([]discovery.Master, error) {
		return []discovery.Master{{Candidate: discovery.Candidate{Host: "node-a", PID: 41}, Leading: true}}, nil
	}
	err := Run(context.Background(), Config{Pages: statusapi.NewClient(statusapi.ClientConfig{}), Masters: noPage,
		Interval: time.Millisecond, Out: &bytes.Buffer{}})
	if !statusapi.Permanent(err) || !strings.Contains(err.Error(), "the leading master (node-a, pid 41) serves no status page") {
		t.Errorf("error %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	addr := page(t, &statusapi.Status{Time: watchT0})
	out := &cancelAt{stop: cancel}
	err = Run(ctx, Config{Pages: statusapi.NewClient(statusapi.ClientConfig{}), Addr: addr, Interval: time.Hour, Out: out})
	if err != nil || out.String() != "this master stands by | leader unknown\n" {
		t.Errorf("error %v, output %q", err, out.String())
	}
}

// cancelAt collects what a watch prints and cancels it at the first write.
type cancelAt struct {
	bytes.Buffer
	stop func()
}

func (w *cancelAt) Write(p []byte) (int, error) {
	defer w.stop()
	return w.Buffer.Write(p)
}

// TestRunOnATerminal: on a terminal the view is drawn, then drawn again
// over itself (the cursor goes up the lines drawn), and the final line
// stays below it.
func TestRunOnATerminal(t *testing.T) {
	running, done := watchStatus(), watchStatus()
	done.Job.AllDone, done.Job.Pass = true, 3
	addr := page(t, &running, &done)
	var out bytes.Buffer
	err := Run(context.Background(), Config{Pages: statusapi.NewClient(statusapi.ClientConfig{}), Addr: addr,
		Interval: time.Millisecond, Out: &out, Terminal: func() (int, int) { return 100, 40 }})
	text := out.String()
	first := strings.Count(strings.SplitN(text, "\x1b[J", 3)[1], "\n")
	switch {
	case err != nil:
		t.Fatal(err)
	case !strings.HasPrefix(text, "\x1b[Jmaster watch: "+addr+" every 1ms; Ctrl-C to stop\n"):
		t.Errorf("the first view: %q", text)
	case !strings.Contains(text, "\n\r\x1b["+strconv.Itoa(first)+"A\x1b[Jmaster watch: "):
		t.Errorf("not drawn over the %d lines of the first view: %q", first, text)
	case !strings.Contains(text, "\npasses   all 3 done\n") ||
		!strings.HasSuffix(text, "\n    trainer-3     420 rec/s\nall 3 passes done: 52 tasks, 16000 records a pass\n"):
		t.Errorf("the end: %q", text[max(len(text)-300, 0):])
	}
}
