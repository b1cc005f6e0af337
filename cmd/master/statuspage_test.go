package main

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/trainmaster/master/internal/statusapi"
)

// TestStatusPageInChromium reads the status pages of a real job as a
// person does, in a browser: Debian's Chromium, headless, dumps the DOM it
// rendered from the leader's page in the middle of a pass, with task 5
// discarded after trainers reported it failed, then from the standby's.
func TestStatusPageInChromium(t *testing.T) {
	chromium := debianTool(t, "/usr/bin/chromium", "chromium")
	// 4 files of 1,000 records in 200 chunks, 25 chunks a task: 8 tasks of
	// 500 records, 4 s each at 8 ms a record. Task 5 goes back to the end
	// of Todo when it first fails and is discarded when it fails again,
	// while the trainers still hold tasks for seconds.
	j := startObservedJob(t, "-passes", "3", "-task-timeout-max", "1", "-chunks-per-task", "25")
	pattern := writeDataset(t, 4)
	ctx, cancel := context.WithCancel(context.Background())
	errs := j.train(ctx, 3, pattern, 8*time.Millisecond, 5)
	defer func() {
		cancel()
		for range 3 {
			<-errs
		}
	}()

	// The leader's page, dumped while task 5 is discarded in the pass;
	// should the pass end before Chromium loads it, the next pass serves.
	var (
		st   statusapi.Status
		page *html.Node
	)
	for try := 1; ; try++ {
		st = awaitStatus(t, j.leaderURL(), 60*time.Second, func(st statusapi.Status) bool {
			return st.Job != nil && !st.Job.AllDone && st.Job.Failed == 1 && st.TrainersTotal == 3
		})
		page = dumpDOM(t, chromium, j.leaderURL())
		if bar := domByID(page, "pass-progress"); bar != nil && domAttr(bar, "data-pass") == fmt.Sprint(st.Job.Pass+1) {
			break
		}
		if try == 3 {
			t.Fatalf("the pass moved on while Chromium loaded the page, %d times:\n%s", try, domString(page))
		}
		t.Logf("pass %d ended while Chromium loaded the page; again", st.Job.Pass+1)
	}
	if t.Failed() {
		return
	}

	// Progress: the current pass's bar and numbers.
	bar := domByID(page, "pass-progress")
	done := domAttr(bar, "data-records-done")
	var recordsDone int64
	if _, err := fmt.Sscan(done, &recordsDone); err != nil || recordsDone < st.Job.RecordsDone || recordsDone > st.Job.Records {
		t.Errorf("the bar shows %q records done, want %d to %d", done, st.Job.RecordsDone, st.Job.Records)
	}
	if want := fmt.Sprintf("%s of 4,000 records", groupDigits(recordsDone)); domAttr(bar, "data-records") != "4000" || !strings.Contains(domText(bar), want) {
		t.Errorf("the current pass's bar: %q, data-records %q; want %q", domText(bar), domAttr(bar, "data-records"), want)
	}
	if n := domFind(page, func(n *html.Node) bool { return domHasClass(n, "pass") }); len(n) != 3 {
		t.Errorf("%d pass rows, want 3", len(n))
	}
	if got, want := domText(domByID(page, "job-state")), fmt.Sprintf("Pass %d of 3", st.Job.Pass+1); !strings.Contains(noSpaces(got), noSpaces(want)) {
		t.Errorf("job state %q, want %q", got, want)
	}
	for _, id := range []string{"rate-chart", "queues", "job", "masters"} {
		if domByID(page, id) == nil {
			t.Errorf("no #%s on the page", id)
		}
	}

	// The trainers, by name.
	var names []string
	for _, row := range domFind(page, func(n *html.Node) bool { return domHasClass(n, "trainer") }) {
		names = append(names, domAttr(row, "data-name"))
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"trainer-0", "trainer-1", "trainer-2"}) {
		t.Errorf("trainers on the page: %q", names)
	}

	// Task 5, discarded this pass with its reason, and in the events.
	const reason = "injected failure of task 5"
	if rows := domFind(domByID(page, "discarded"), func(n *html.Node) bool { return domAttr(n, "data-task") == "5" }); len(rows) != 1 || !strings.Contains(domText(rows[0]), reason) {
		t.Errorf("discarded tasks: %q", domText(domByID(page, "discarded")))
	}
	events := domFind(domByID(page, "events"), func(n *html.Node) bool {
		return domHasClass(n, "event") && domHasClass(n, "discarded") && domAttr(n, "data-task") == "5"
	})
	if len(events) == 0 || !strings.Contains(domText(events[0]), reason) || !strings.Contains(domText(events[0]), "trainer-") {
		t.Errorf("no event of task 5 discarded with its reason: %q", domText(domByID(page, "events")))
	}

	// The standby's page says it stands by and links to the leader's.
	standby := dumpDOM(t, chromium, j.standbyURL())
	if role := domByID(standby, "role"); role == nil || domAttr(role, "data-role") != "standby" || !strings.Contains(domText(domByID(standby, "standby")), "This master stands by") {
		t.Errorf("the standby's page:\n%s", domString(standby))
	}
	if link := domByID(standby, "leader-link"); link == nil || domAttr(link, "href") != j.leaderURL() {
		t.Errorf("the standby's page does not link to the leader's, %s:\n%s", j.leaderURL(), domString(standby))
	}
	if domByID(standby, "pass-progress") != nil {
		t.Error("the standby's page shows a progress")
	}
	// The trainers were still at work when the pages were read.
	if st := statusOf(t, j.leaderURL()); st.Job == nil || st.Job.AllDone {
		t.Errorf("the job ended during the test: %+v", st.Job)
	}
}

// dumpDOM loads url in headless Chromium and returns the DOM it rendered.
// Chromium and its children (its own process group) are killed if it takes
// more than a minute.
func dumpDOM(t *testing.T, chromium, url string) *html.Node {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+t.TempDir(), "--dump-dom", url)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium --dump-dom %s: %v (context: %v)\n%s", url, err, ctx.Err(), stderr.String())
	}
	doc, err := html.Parse(&stdout)
	if err != nil {
		t.Fatalf("the DOM Chromium dumped does not parse: %v", err)
	}
	if domByID(doc, "role") == nil {
		t.Fatalf("Chromium did not render the status page of %s:\n%s\n%s", url, stdout.String(), stderr.String())
	}
	return doc
}

// domFind returns the elements under n (nil: none) for which ok holds.
func domFind(n *html.Node, ok func(*html.Node) bool) []*html.Node {
	if n == nil {
		return nil
	}
	var out []*html.Node
	for d := range n.Descendants() {
		if d.Type == html.ElementNode && ok(d) {
			out = append(out, d)
		}
	}
	return out
}

func domByID(doc *html.Node, id string) *html.Node {
	if n := domFind(doc, func(n *html.Node) bool { return domAttr(n, "id") == id }); len(n) > 0 {
		return n[0]
	}
	return nil
}

func domAttr(n *html.Node, key string) string {
	if i := slices.IndexFunc(n.Attr, func(a html.Attribute) bool { return a.Key == key }); i >= 0 {
		return n.Attr[i].Val
	}
	return ""
}

func domHasClass(n *html.Node, class string) bool {
	return slices.Contains(strings.Fields(domAttr(n, "class")), class)
}

// domText is the text under n, its runs of white space made one space.
func domText(n *html.Node) string {
	if n == nil {
		return ""
	}
	var b strings.Builder
	for d := range n.Descendants() {
		if d.Type == html.TextNode {
			b.WriteString(d.Data + " ")
		}
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

func noSpaces(s string) string { return strings.Join(strings.Fields(s), "") }

func domString(n *html.Node) string {
	var b strings.Builder
	_ = html.Render(&b, n)
	return b.String()
}

// groupDigits writes n as the page does, 1,234.
func groupDigits(n int64) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
