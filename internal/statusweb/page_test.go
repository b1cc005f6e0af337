package statusweb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/trainmaster/master/go/discovery"
	"github.com/trainmaster/master/internal/monitor"
	"github.com/trainmaster/master/internal/statusapi"
)

// hostile is a trainer name a client may send: the page must show it as
// text, never run it.
const hostile = `<script>alert("x")</script>`

var pageNow = time.Date(2026, 11, 24, 15, 4, 5, 0, time.UTC)

func seconds(s float64) *float64 { return &s }

// leaderStatus is a leader's status in the second of three passes.
func leaderStatus() statusapi.Status {
	var rate []statusapi.RatePoint
	for i := range 60 {
		rate = append(rate, statusapi.RatePoint{Time: pageNow.Add(time.Duration(i-60) * 10 * time.Second),
			RecordsPerSecond: 2000 + float64(i*13%400)})
	}
	long := strings.Repeat("a very long reason <b>not bold</b> ", 40)
	return statusapi.Status{
		Time: pageNow, Leading: true,
		Masters: []discovery.Master{
			{Candidate: discovery.Candidate{Host: "node-a", PID: 41, HTTP: "PAGEHOST"}, Leading: true},
			{Candidate: discovery.Candidate{Host: "node-b", PID: 42, HTTP: "10.0.0.2:8081"}},
			{Candidate: discovery.Candidate{Host: "node-c"}},
		},
		Job: &statusapi.JobStatus{
			Dataset: []string{"/data/train-*.recordio", "/data/<extra>.recordio"}, Files: 8, Chunks: 520, ChunksPerTask: 10,
			Tasks: 52, Records: 16000, Pass: 1, Passes: 3, Todo: 20, Pending: 6, Done: 24, Failed: 2, RecordsDone: 7400,
			RecordsPerSecond: 2735.4, PassETASeconds: seconds(3.1), JobETASeconds: seconds(9),
			Discarded: []statusapi.DiscardedTask{{Task: 5, Timeouts: 0, Reason: long}},
		},
		Trainers: []statusapi.TrainerStatus{
			{Name: hostile, TasksPass: 1, RecordsPass: 300, TasksTotal: 9, RecordsTotal: 2900, Holding: 1, Stalled: true,
				Task:     &statusapi.HeldTask{Index: 17, Pass: 1, Since: pageNow.Add(-42 * time.Second), HeldSeconds: 42},
				Timeouts: 1, LastSeen: pageNow.Add(-42 * time.Second), Connected: true},
			{Name: "trainer-1", TasksPass: 5, RecordsPass: 1500, TasksTotal: 20, RecordsTotal: 6000, RecordsPerSecond: 610.5,
				Failures: 2, LastSeen: pageNow.Add(-3 * time.Second), Connected: true},
			{Name: "trainer-2-" + strings.Repeat("x", 110), TasksPass: 6, RecordsPass: 1800, TasksTotal: 21,
				RecordsTotal: 6300, RecordsPerSecond: 705, Holding: 3, LastSeen: pageNow, Connected: true,
				Task: &statusapi.HeldTask{Index: 30, Pass: 1, Since: pageNow.Add(-2 * time.Second), HeldSeconds: 2}},
		},
		TrainersTotal: 250, TrainersConnected: 240, TrainersStalled: 1,
		Rate: rate,
		Events: []statusapi.Event{
			{Time: pageNow.Add(-5 * time.Second), Task: 5, Pass: 1, Trainer: "trainer-1", Cause: "failed", Discarded: true, Reason: long},
			{Time: pageNow.Add(-9 * time.Second), Task: 17, Pass: 1, Trainer: hostile, Cause: "timed out"},
		},
	}
}

// twoDatasetsStatus is leaderStatus with two more datasets: eval, an
// index-range dataset in its fourth round, and holdout, done; a trainer
// holds a task of eval and one of eval's failed.
func twoDatasetsStatus() statusapi.Status {
	st := leaderStatus()
	st.Job.Name = "train"
	st.Datasets = []statusapi.JobStatus{{
		Name: "eval", Round: 2, RecordsPerTask: 1000, Dataset: []string{}, Tasks: 25, Records: 25000, Pass: 4, Passes: 6,
		Todo: 7, Pending: 2, Done: 16, RecordsDone: 16000, RecordsPerSecond: 310, Discarded: []statusapi.DiscardedTask{},
	}, {
		Name: "holdout", RecordsPerTask: 10, Dataset: []string{}, Tasks: 10, Records: 100, Pass: 1, Passes: 1, AllDone: true,
		Done: 10, Discarded: []statusapi.DiscardedTask{},
	}}
	st.Trainers[0].Task.Dataset, st.Trainers[0].Task.Index, st.Trainers[0].Task.Pass = "eval", 4, 4
	st.Trainers[2].Task.Dataset = "train"
	st.Events[0] = statusapi.Event{Time: pageNow.Add(-5 * time.Second), Dataset: "eval", Task: 4, Pass: 4, Trainer: "trainer-1",
		Cause: "failed", Discarded: true, Reason: "disk " + st.Events[0].Reason}
	st.Events[1].Dataset = "train"
	return st
}

// standbyStatus is a standby's status; the leader's page is at leaderHTTP.
func standbyStatus(leaderHTTP string) statusapi.Status {
	return statusapi.Status{Time: pageNow, Masters: []discovery.Master{
		{Candidate: discovery.Candidate{Host: "node-a", PID: 41, HTTP: leaderHTTP}, Leading: true},
		{Candidate: discovery.Candidate{Host: "node-b", PID: 42, HTTP: "PAGEHOST"}},
	}}
}

// render serves st as the page through httptest (over TLS when tls) and
// returns the body and the document. "PAGEHOST" in the masters' HTTP
// addresses stands for the test server's address.
func render(t *testing.T, st statusapi.Status, tls bool) (string, *html.Node) {
	t.Helper()
	s, err := New(Config{Monitor: monitor.New(monitor.Config{}), Refresh: 7 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for i, m := range st.Masters {
			if m.HTTP == "PAGEHOST" {
				st.Masters[i].HTTP = r.Host
			}
		}
		s.writePage(w, r, st)
	})
	srv := httptest.NewServer(h)
	if tls {
		srv = httptest.NewTLSServer(h)
	}
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("GET /: %s, %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	return parsePage(t, resp.Body)
}

func parsePage(t *testing.T, r io.Reader) (string, *html.Node) {
	t.Helper()
	body, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := html.Parse(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("the page does not parse: %v", err)
	}
	// The page runs nothing and loads nothing.
	for _, n := range all(doc, func(n *html.Node) bool { return n.Type == html.ElementNode }) {
		if n.Data == "script" || n.Data == "img" || n.Data == "iframe" || n.Data == "object" || (n.Data == "link" && attr(n, "rel") != "") {
			t.Errorf("the page has a %s element: %s", n.Data, attr(n, "src")+attr(n, "href"))
		}
		for _, a := range n.Attr {
			if (a.Key == "src" || a.Key == "href") && strings.Contains(a.Val, "//") && !strings.HasPrefix(a.Val, "http://127.0.0.1") &&
				!strings.HasPrefix(a.Val, "https://127.0.0.1") && !strings.HasPrefix(a.Val, "http://10.0.0.") && !strings.HasPrefix(a.Val, "https://10.0.0.") {
				t.Errorf("the page refers to %s", a.Val)
			}
			if strings.HasPrefix(a.Key, "on") {
				t.Errorf("the page has an event handler %s=%q", a.Key, a.Val)
			}
		}
	}
	return string(body), doc
}

func TestPage(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status statusapi.Status
		tls    bool
		checks []check
	}{{
		name:   "leader in the second of three passes",
		status: leaderStatus(),
		checks: []check{
			hasText("title", "pass 2/3, 46%"),
			hasText("#role", "this master leads"),
			hasText("#job", "/data/train-*.recordio", "/data/<extra>.recordio", "Files8", "Chunks520", "Chunks per task10",
				"Tasks per pass52", "Records per pass16,000", "Passes3"),
			hasText("#job-state", "Pass 2 of 3", "46% of this pass, 48% of the job"),
			hasText("#rate-now", "2,735"),
			hasText("#pass-eta", "3 s"), hasText("#job-eta", "9 s"),
			passes("done width: 100.00%", "current width: 46.25%", "todo width: 0.00%"),
			attrIs("#pass-progress", "data-pass", "2"), attrIs("#pass-progress", "data-records-done", "7400"),
			hasText("#pass-progress", "7,400 of 16,000 records, 46%"),
			hasText("#queues", "To do20", "Pending6", "Done24", "Failed2"),
			hasText("#rate-chart", "2,500", "−10 min", "now"),
			chartDrawn(true),
			trainers(hostile+" (stalled)", "trainer-1", "trainer-2-"+strings.Repeat("x", 110)),
			hasText(".trainer.stalled", "stalled", "task 17 for 42 s", "42 s ago"),
			hasText("#trainers-hidden", "247 more trainers are not shown"),
			hasText("#trainers", "task 30 for 2 s +2 more"),
			hasText("#discarded", "2 this pass", "a very long reason <b>not bold</b>", "1 more is not shown"),
			hasText("#events", "failed", "discarded", "timed out", "5 s ago", hostile),
			hasText("#masters", "leader", "node-a", "pid 41", "· this page", "standby 1", "node-b", "http://10.0.0.2:8081/", "standby 2", "node-c", "no status page"),
			absent("#datasets"), // train alone, not named
			hasText("#queues", "Tasks of this pass · 52"),
			escaped,
			func(t *testing.T, body string, _ *html.Node) {
				if !strings.Contains(body, `<meta http-equiv="refresh" content="7">`) {
					t.Error("no refresh every 7 s")
				}
			},
		},
	}, {
		name:   "standby",
		status: standbyStatus("10.0.0.1:8081"),
		checks: []check{
			hasText("title", "standing by"),
			hasText("#role", "this master stands by"),
			hasText("#standby", "This master stands by", "node-a", "pid 41"),
			attrIs("#leader-link", "href", "http://10.0.0.1:8081/"),
			absent("#pass-progress", "#job", "#queues", "#discarded", "#trainers", "#rate-history"),
			hasText("#masters", "this page"),
		},
	}, {
		name:   "standby over TLS",
		status: standbyStatus("10.0.0.1:8081"),
		tls:    true,
		checks: []check{attrIs("#leader-link", "href", "https://10.0.0.1:8081/")},
	}, {
		name:   "standby whose leader serves no page",
		status: standbyStatus(""),
		checks: []check{hasText("#standby", "node-a", "it serves no status page"), absent("#leader-link")},
	}, {
		name:   "standby that cannot read the lock keys",
		status: statusapi.Status{Time: pageNow, Masters: []discovery.Master{}, MastersError: "etcd: context deadline exceeded"},
		checks: []check{
			hasText("#standby", "No leader is known: etcd: context deadline exceeded"),
			hasText("#masters-error", "etcd: context deadline exceeded"),
		},
	}, {
		name:   "leader without a dataset, no history",
		status: statusapi.Status{Time: pageNow, Leading: true},
		checks: []check{
			hasText("#no-dataset", "waits for a dataset"),
			hasText("#rate-chart", "no records finished in this time", "−2 min", "now"),
			chartDrawn(false),
			hasText("#trainers", "No trainer has called"),
			absent("#pass-progress", "#queues"),
		},
	}, {
		name:   "train and an index-range eval",
		status: twoDatasetsStatus(),
		checks: []check{
			hasText("title", "pass 2/3, 46%"), // the job's figures are train's
			hasText("#job-state", "Pass 2 of 3"),
			hasText("#rate-now", "2,735"),
			hasText("#rate-history", "every dataset, last 15 min"),
			sets("train: 8 files in tasks of 10 chunks | 1 | 2 of 3 | 20 6 24 2 | 7,400 of 16,000 · 46% | 2,735",
				"eval: index range of 25,000 records in tasks of 1,000 | 3 | 5 of 6 | 7 2 16 0 | 16,000 of 25,000 · 64% | 310",
				"holdout: index range of 100 records in tasks of 10 | 1 | done 1 pass | 0 0 10 0 | 0 of 100 · 0% | 0"),
			hasText("#datasets", "Datasets", "3, train first"),
			hasText("#progress", "Progress · train"), hasText("#job", "Job · train"),
			hasText("#queues", "Tasks of this pass · train, 52"), hasText("#discarded", "· train, 2 this pass"),
			// The task of eval is of eval's current pass: no "of pass".
			hasText("#trainers", "eval task 4 for 42 s", "task 30 for 2 s"),
			hasText(".event.discarded", "eval 4", "disk"),
			attrIs(".event.discarded", "data-dataset", "eval"),
			escaped,
		},
	}, {
		name: "an index-range train",
		status: func() statusapi.Status {
			st := leaderStatus()
			st.Job.Name, st.Job.Dataset, st.Job.Files, st.Job.Chunks, st.Job.ChunksPerTask = "train", []string{}, 0, 0, 0
			st.Job.RecordsPerTask, st.Job.Round = 1000, 2
			return st
		}(),
		checks: []check{
			hasText("#job", "Datasetindex range of 16,000 records", "Records per task1,000", "Tasks per pass52", "Round3"),
			absent("#datasets"),
			hasText("#rate-history", "Records per second · last 15 min"),
		},
	}, {
		name: "pieces cut from stragglers",
		status: func() statusapi.Status {
			st := leaderStatus()
			st.Job.Pieces, st.Job.Pending = 2, 8
			return st
		}(),
		checks: []check{hasText("#queues", "52 + 2 pieces cut from stragglers", "Pending8")},
	}, {
		name: "all done",
		status: func() statusapi.Status {
			st := leaderStatus()
			j := st.Job
			j.Pass, j.AllDone, j.Todo, j.Pending, j.Done, j.Failed, j.RecordsDone = 3, true, 0, 0, 52, 0, 0
			j.PassETASeconds, j.JobETASeconds, j.Discarded = nil, nil, []statusapi.DiscardedTask{}
			st.Rate = nil
			for i := range st.Trainers {
				st.Trainers[i].Stalled, st.Trainers[i].Task = false, nil
			}
			return st
		}(),
		checks: []check{
			hasText("title", "all 3 passes done"),
			hasText("#job-state", "done"),
			passes("done width: 100.00%", "done width: 100.00%", "done width: 100.00%"),
			absent("#pass-progress", "#pass-eta", ".trainer.stalled"),
			hasText("#discarded", "None"),
			chartDrawn(false),
		},
	}, {
		name: "many passes, rate unknown",
		status: func() statusapi.Status {
			st := leaderStatus()
			st.Job.Pass, st.Job.Passes, st.Job.RecordsPerSecond = 36, 1000, 0
			st.Job.PassETASeconds, st.Job.JobETASeconds = nil, nil
			return st
		}(),
		checks: []check{
			passes("done width: 100.00%", "current width: 46.25%", "todo width: 0.00%"),
			hasText("#passes", "Passes 1–36", "Pass 37", "Passes 38–1000"),
			hasText("#pass-eta", "unknown"), hasText("#job-eta", "unknown"),
			hasText("#job-state", "Pass 37 of 1000", "3% of the job"),
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			body, doc := render(t, tc.status, tc.tls)
			for _, c := range tc.checks {
				c(t, body, doc)
			}
		})
	}
}

// TestPageThroughTheHandler: "/" of the Server's handler is the page,
// with the masters its Config reads; a standby's monitor has no job.
func TestPageThroughTheHandler(t *testing.T) {
	for _, tc := range []struct {
		name    string
		masters func(context.Context) ([]discovery.Master, error)
		want    []check
	}{
		{"leader known", func(context.Context) ([]discovery.Master, error) {
			return []discovery.Master{{Candidate: discovery.Candidate{Host: "node-a", HTTP: "10.0.0.9:80"}, Leading: true}}, nil
		}, []check{attrIs("#leader-link", "href", "http://10.0.0.9:80/"), hasText("#masters", "node-a")}},
		{"lock keys unreadable", func(context.Context) ([]discovery.Master, error) {
			return nil, errors.New("no etcd")
		}, []check{hasText("#standby", "No leader is known: no etcd")}},
		{"no masters func", nil, []check{hasText("#standby", "no master holds the lock"), hasText("#masters", "No master is known")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(Config{Monitor: monitor.New(monitor.Config{}), Masters: tc.masters})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(s.Handler())
			defer srv.Close()
			resp, err := http.Get(srv.URL + "/")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("GET /: %s", resp.Status)
			}
			body, doc := parsePage(t, resp.Body)
			if !strings.Contains(body, `content="5"`) {
				t.Error("the page does not refresh every 5 s by default")
			}
			for _, c := range append(tc.want, hasText("#role", "stands by")) {
				c(t, body, doc)
			}
		})
	}
}

func TestPageFormats(t *testing.T) {
	pct := func(done, all int64) string {
		return strconv.Itoa((&statusapi.JobStatus{RecordsDone: done, Records: all}).Percent())
	}
	for _, tc := range []struct{ got, want string }{
		{num(0), "0"}, {num(999), "999"}, {num(1000), "1,000"}, {num(int64(-1234567)), "-1,234,567"},
		{num(2.5), "2.5"}, {num(2.0), "2"}, {num(2735.4), "2,735"},
		{dur(0.2), "under 1 s"}, {dur(3), "3 s"}, {dur(59.4), "59 s"}, {dur(60), "1 min"}, {dur(200), "3 min 20 s"},
		{dur(1800), "30 min"}, {dur(7500), "2 h 5 min"}, {dur(3 * 86400), "3 d"}, {dur(-1), "unknown"},
		{eta(nil), "unknown"}, {eta(seconds(90)), "1 min 30 s"},
		{pct(999, 1000), "99"}, {pct(1000, 1000), "100"}, {pct(1, 0), "0"},
		{plural(1, "pass", "passes"), "1 pass"}, {plural(1200, "pass", "passes"), "1,200 passes"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
	for _, tc := range []struct{ v, want float64 }{{0.3, 0.5}, {1, 1}, {1.2, 2}, {2.2, 2.5}, {2735, 5000}, {9000, 10000}} {
		if got := niceCeil(tc.v); got != tc.want {
			t.Errorf("niceCeil(%v) = %v, want %v", tc.v, got, tc.want)
		}
	}
}

type check = func(t *testing.T, body string, doc *html.Node)

// escaped: the hostile trainer name is text in the page, escaped in its
// source, and no element of it.
func escaped(t *testing.T, body string, doc *html.Node) {
	t.Helper()
	if strings.Contains(body, "<script") || strings.Contains(body, "<b>not bold") || strings.Contains(body, "<extra>") {
		t.Error("a client's string is in the page unescaped")
	}
	if !strings.Contains(body, "&lt;script&gt;") {
		t.Error("the hostile name is not in the page, escaped")
	}
	if n := all(doc, func(n *html.Node) bool { return n.Type == html.ElementNode && n.Data == "b" && textOf(n) == "not bold" }); len(n) > 0 {
		t.Error("a reason's markup became an element")
	}
}

// hasText: the element sel has every one of want in its text (spaces
// dropped from both, so that layout does not matter).
func hasText(sel string, want ...string) check {
	return func(t *testing.T, _ string, doc *html.Node) {
		t.Helper()
		n := one(t, doc, sel)
		if n == nil {
			return
		}
		got := squeeze(textOf(n))
		for _, w := range want {
			if !strings.Contains(got, squeeze(w)) {
				t.Errorf("%s: no %q in %q", sel, w, got)
			}
		}
	}
}

func attrIs(sel, key, want string) check {
	return func(t *testing.T, _ string, doc *html.Node) {
		t.Helper()
		if n := one(t, doc, sel); n != nil && attr(n, key) != want {
			t.Errorf("%s: %s=%q, want %q", sel, key, attr(n, key), want)
		}
	}
}

func absent(sels ...string) check {
	return func(t *testing.T, _ string, doc *html.Node) {
		t.Helper()
		for _, sel := range sels {
			if n := find(doc, sel); len(n) > 0 {
				t.Errorf("%s is on the page: %q", sel, textOf(n[0]))
			}
		}
	}
}

// rows: the elements sel matches, each as desc writes it, are want.
func rows(sel string, desc func(*html.Node) string, want ...string) check {
	return func(t *testing.T, _ string, doc *html.Node) {
		t.Helper()
		var got []string
		for _, n := range find(doc, sel) {
			got = append(got, desc(n))
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: %q, want %q", sel, got, want)
		}
	}
}

// passes: the pass rows, each as its state and its bar's style.
func passes(want ...string) check {
	return rows(".pass", func(n *html.Node) string {
		state := strings.TrimSpace(strings.TrimPrefix(attr(n, "class"), "pass"))
		for _, bar := range find(n, ".fill") {
			state += " " + attr(bar, "style")
		}
		return state
	}, want...)
}

// sets: the rows of the datasets table, each as "name: kind | round |
// pass | todo pending done failed | records | rate".
func sets(want ...string) check {
	return rows(".set", func(n *html.Node) string {
		var cells []string
		for c := range n.ChildNodes() {
			if c.Type == html.ElementNode && c.Data == "td" {
				cells = append(cells, strings.Join(strings.Fields(textOf(c)), " "))
			}
		}
		if len(cells) != 10 {
			return fmt.Sprintf("%d cells: %q", len(cells), cells)
		}
		return fmt.Sprintf("%s: %s | %s | %s | %s | %s | %s", cells[0], cells[1], cells[2], cells[3],
			strings.Join(cells[4:8], " "), cells[8], cells[9])
	}, want...)
}

// trainers: the trainer rows, each as its name, "(stalled)" after it when
// it is marked stalled.
func trainers(want ...string) check {
	return rows(".trainer", func(n *html.Node) string {
		if hasClass(n, "stalled") {
			return attr(n, "data-name") + " (stalled)"
		}
		return attr(n, "data-name")
	}, want...)
}

func chartDrawn(drawn bool) check {
	return func(t *testing.T, _ string, doc *html.Node) {
		t.Helper()
		lines := find(doc, ".line")
		if drawn != (len(lines) == 1) {
			t.Fatalf("chart lines: %d, want drawn %v", len(lines), drawn)
		}
		if drawn && len(strings.Fields(attr(lines[0], "points"))) < 2 {
			t.Errorf("chart line points %q", attr(lines[0], "points"))
		}
	}
}

// find returns the elements under n that a selector matches: "#id",
// ".class", ".class.class", or a tag name.
func find(n *html.Node, sel string) []*html.Node {
	return all(n, func(n *html.Node) bool {
		if n.Type != html.ElementNode {
			return false
		}
		switch {
		case strings.HasPrefix(sel, "#"):
			return attr(n, "id") == sel[1:]
		case strings.HasPrefix(sel, "."):
			for _, c := range strings.Split(sel[1:], ".") {
				if !hasClass(n, c) {
					return false
				}
			}
			return true
		}
		return n.Data == sel
	})
}

func one(t *testing.T, doc *html.Node, sel string) *html.Node {
	t.Helper()
	n := find(doc, sel)
	if len(n) == 0 {
		t.Errorf("no %s on the page", sel)
		return nil
	}
	return n[0]
}

func all(n *html.Node, ok func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	for d := range n.Descendants() {
		if ok(d) {
			out = append(out, d)
		}
	}
	return out
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func hasClass(n *html.Node, c string) bool {
	for _, f := range strings.Fields(attr(n, "class")) {
		if f == c {
			return true
		}
	}
	return false
}

func textOf(n *html.Node) string {
	var b strings.Builder
	for d := range n.Descendants() {
		if d.Type == html.TextNode {
			b.WriteString(d.Data)
		}
	}
	return b.String()
}

func squeeze(s string) string { return strings.Join(strings.Fields(s), "") }
