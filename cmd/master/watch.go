package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	neturl "net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/namsral/flag"
	"github.com/pkg/errors"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/trainmaster/master/go/discovery"
	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/credfile"
	"github.com/trainmaster/master/internal/etcdconn"
	"github.com/trainmaster/master/internal/monitor"
)

// watchOptions are the flags of `master watch`.
type watchOptions struct {
	etcd      etcdconn.Options
	namespace string
	dataDir   string
	addr      string // poll this page, not the leader's from etcd
	interval  time.Duration
	tokenFile string
	tlsCA     string
	tlsCert   string
	tlsKey    string
	plain     bool
}

// commandLineOnly are the flags of `master watch` that the environment
// does not set: the master's own MASTER_ADDR, MASTER_TLS_CERT and
// MASTER_TLS_KEY name its trainer port and its server certificate, not a
// status page and a client certificate. (MASTER_TOKEN_FILE is the token of
// the master's door too, and is welcome.)
var commandLineOnly = []string{"addr", "tls-cert", "tls-key"}

func parseWatchFlags(args []string, stderr io.Writer) (watchOptions, error) {
	var o watchOptions
	fs := flag.NewFlagSetWithEnvPrefix("master watch", "MASTER", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o.etcd.Register(fs)
	fs.StringVar(&o.namespace, "namespace", "", "`prefix` of the job's etcd keys, where the leading master's page is found")
	fs.StringVar(&o.dataDir, "data-dir", "./master-data", "`directory` of an embedded etcd, whose endpoint file is used when neither -endpoints nor -addr is given")
	fs.StringVar(&o.addr, "addr", "", "watch the status page at this `host:port` (a master's -http-addr) instead of finding the leader's through etcd")
	fs.DurationVar(&o.interval, "interval", time.Second, "poll the status page this `often`")
	fs.StringVar(&o.tokenFile, "token-file", "", "send the master's token held in this `file` (Authorization: Bearer)")
	fs.StringVar(&o.tlsCA, "tls-ca", "", "speak HTTPS to the page, trusting the CA certificates in this `file` (PEM)")
	fs.StringVar(&o.tlsCert, "tls-cert", "", "client certificate `file` (PEM; with -tls-key and -tls-ca) for a master started with -tls-client-ca")
	fs.StringVar(&o.tlsKey, "tls-key", "", "private key `file` of -tls-cert (PEM)")
	fs.BoolVar(&o.plain, "plain", false, "print plain summary lines even on a terminal")
	for _, name := range commandLineOnly {
		_ = fs.Set(name, "") // marks them set, so that the environment is not read for them
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	switch {
	case fs.NArg() > 0:
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	case o.interval <= 0:
		return o, fmt.Errorf("-interval must be positive, not %v", o.interval)
	case (o.tlsCert == "") != (o.tlsKey == ""):
		return o, errors.New("give -tls-cert and -tls-key together")
	case o.tlsCert != "" && o.tlsCA == "":
		return o, errors.New("-tls-cert needs -tls-ca (the CA of the master's certificate)")
	}
	return o, nil
}

// runWatch is `master watch`: a live view of a job in the terminal, for a person at a
// shell. It polls the leading master's /status.json (the HTTP side door,
// -http-addr) every -interval and shows the pass's progress bar with the
// rate and the time left, the queues, the five slowest trainers (stalled
// ones marked "!") and the masters.
//
// Where it looks: without -addr it reads the job's lock keys in etcd
// (discovery.Masters) and polls the leader's page; when that master stops
// answering or stops leading it reads them again, so it follows a
// failover. With -addr it polls that one page, and retries it when it does
// not answer (a standby's page says it stands by, and who leads).
//
// Output: on a terminal the view is redrawn in place (the cursor goes back
// up over the last view, which is cleared, ANSI); elsewhere, or with
// -plain, it prints one summary line per poll, and only when the line
// differs from the last one printed, so an idle job prints nothing:
//
//	pass 2/3 42% | 1234 rec/s | eta pass 12s job 40s | todo 3 pending 4 done 10 failed 0 | slowest: trainer-2 (310 rec/s), ... | leader 10.0.0.5:8081
//
// It ends with exit status 0 once all passes are done, after a final line
// "all N passes done ..."; Ctrl-C (or SIGTERM) ends it cleanly, also with
// 0. A page that refuses the token or the client certificate, a
// certificate not signed by -tls-ca, or a leader that serves no page ends
// it at once with an error naming the address.
func runWatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseWatchFlags(args, stderr)
	if err != nil {
		return err
	}
	pages, err := o.pageClient()
	if err != nil {
		return err
	}
	w := &watcher{pages: pages, interval: o.interval, addr: o.addr, namespace: o.namespace,
		screen: newScreen(stdout, o.plain, o.interval)}
	w.screen.addr = o.addr
	if o.addr == "" {
		if len(o.etcd.Endpoints) == 0 {
			if o.etcd.Endpoints, err = embeddedEndpoint(o.dataDir); err != nil {
				return fmt.Errorf("no -addr, no -endpoints, and %w", err)
			}
		}
		log, err := newLogger("warn", stderr)
		if err != nil {
			return err
		}
		cli, err := o.etcd.Connect(ctx, log)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		defer cli.Close()
		w.etcd = cli
	}
	return w.run(ctx)
}

// embeddedEndpoint reads the endpoint an embedded etcd wrote in dataDir.
func embeddedEndpoint(dataDir string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, "endpoint"))
	if err != nil {
		return nil, fmt.Errorf("no embedded etcd's endpoint file: %w", err)
	}
	return []string{strings.TrimSpace(string(b))}, nil
}

// pageClient is how the watch asks a status page: HTTP or HTTPS, with the
// token.
type pageClient struct {
	http   *http.Client
	scheme string
	token  string
	cert   bool // a client certificate is offered
}

func (o watchOptions) pageClient() (*pageClient, error) {
	c := &pageClient{scheme: "http", cert: o.tlsCert != ""}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.Proxy = nil // a master's page is reached directly
	if o.tlsCA != "" {
		pool, err := credfile.CertPool(o.tlsCA)
		if err != nil {
			return nil, errors.WithMessage(err, "-tls-ca")
		}
		transport.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
		if c.cert {
			pair, err := tls.LoadX509KeyPair(o.tlsCert, o.tlsKey)
			if err != nil {
				return nil, errors.WithMessage(err, "-tls-cert and -tls-key")
			}
			transport.TLSClientConfig.Certificates = []tls.Certificate{pair}
		}
		c.scheme = "https"
	}
	if o.tokenFile != "" {
		token, err := credfile.Token(o.tokenFile)
		if err != nil {
			return nil, errors.WithMessage(err, "-token-file")
		}
		c.token = token
	}
	// A page answers at once or its master is in trouble; the door itself
	// gives etcd 2 s to list the masters.
	c.http = &http.Client{Transport: transport, Timeout: max(2*o.interval, 5*time.Second)}
	return c, nil
}

// finalError is a trouble that trying again cannot mend: the watch ends
// with it.
type finalError struct{ msg string }

func (e finalError) Error() string { return e.msg }

func final(format string, args ...any) error { return finalError{fmt.Sprintf(format, args...)} }

// maxStatusBytes bounds the answer read from a page (a status with the
// most trainers shown is far smaller).
const maxStatusBytes = 16 << 20

// status fetches the status of the page at addr; a finalError says it
// will never answer this watch.
func (c *pageClient) status(ctx context.Context, addr string) (monitor.Status, error) {
	var st monitor.Status
	url := c.scheme + "://" + addr + "/status.json"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return st, final("the status page %s: %v", url, err)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return st, c.transportError(url, err)
	}
	defer resp.Body.Close()
	body := io.LimitReader(resp.Body, maxStatusBytes)
	switch resp.StatusCode {
	case http.StatusOK:
		if err := json.NewDecoder(body).Decode(&st); err != nil {
			return st, fmt.Errorf("the status page %s: %w", url, err)
		}
		return st, nil
	case http.StatusUnauthorized:
		if c.token == "" {
			return st, final("the status page %s wants the master's token: give -token-file", url)
		}
		return st, final("the status page %s refused the token of -token-file", url)
	case http.StatusForbidden:
		if c.cert {
			return st, final("the status page %s refused the client certificate of -tls-cert", url)
		}
		return st, final("the status page %s wants a client certificate signed by the master's client CA: give -tls-cert and -tls-key", url)
	case http.StatusNotFound:
		return st, final("%s is not a master's status page (404 Not Found); give the master's -http-addr", url)
	case http.StatusBadRequest:
		msg, _ := io.ReadAll(io.LimitReader(body, 512))
		if strings.Contains(string(msg), "HTTPS") {
			return st, final("the status page at %s speaks HTTPS: give -tls-ca with the CA of the master's certificate", addr)
		}
		return st, final("the status page %s answered %s: %s", url, resp.Status, strings.TrimSpace(string(msg)))
	}
	return st, fmt.Errorf("the status page %s answered %s", url, resp.Status)
}

// transportError tells the TLS troubles, which are final, from a master
// that does not answer.
func (c *pageClient) transportError(url string, err error) error {
	var verify *tls.CertificateVerificationError
	var op *net.OpError
	var uerr *neturl.Error
	switch {
	case errors.Is(err, http.ErrSchemeMismatch):
		return final("the status page %s speaks plain HTTP, not HTTPS: drop -tls-ca", url)
	case errors.As(err, &verify):
		return final("the certificate of the status page %s is not to be trusted: %v (give -tls-ca the CA that signed it)", url, verify.Err)
	case errors.As(err, &op) && op.Op == "remote error": // a TLS alert from the page
		if c.cert {
			return final("the status page %s refused the client certificate of -tls-cert: %v", url, op.Err)
		}
		return final("the status page %s refused the TLS handshake: %v", url, op.Err)
	case errors.As(err, &uerr):
		return uerr.Err // the URL is said by the caller
	}
	return err
}

// watcher polls status pages and shows them on its screen.
type watcher struct {
	pages     *pageClient
	interval  time.Duration
	addr      string           // -addr: the one page polled; empty: the leader's from etcd
	etcd      *clientv3.Client // without -addr
	namespace string
	screen    *screen
}

// run polls until all passes are done, ctx ends or a final error.
func (w *watcher) run(ctx context.Context) error {
	tick := time.NewTicker(w.interval)
	defer tick.Stop()
	addr := w.addr
	for {
		if addr == "" {
			a, notice, err := w.leaderPage(ctx)
			if ctx.Err() != nil {
				return nil
			}
			if err != nil {
				return err
			}
			addr = a
			w.screen.notice(notice)
		}
		if addr != "" {
			st, err := w.pages.status(ctx, addr)
			var fin finalError
			switch {
			case ctx.Err() != nil:
			case errors.As(err, &fin):
				return err
			case err != nil:
				w.screen.notice(w.unanswered(addr, err))
				addr = w.addr
			case !st.Leading && w.addr == "":
				w.screen.notice(fmt.Sprintf("the master at %s stands by now; looking for the leader in etcd", addr))
				addr = ""
			default:
				w.screen.show(st, addr, time.Now())
				if st.Job != nil && st.Job.AllDone {
					w.screen.done(st)
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return nil // the cursor is below the view already
		case <-tick.C:
		}
	}
}

// unanswered says that the page at addr did not answer, and what the
// watch does about it.
func (w *watcher) unanswered(addr string, err error) string {
	next := "trying again"
	if w.addr == "" {
		next = "looking for the leader in etcd"
	}
	return fmt.Sprintf("the master at %s does not answer (%v); %s", addr, err, next)
}

// leaderPage reads the lock keys and returns the leader's page, or a
// notice saying why there is none yet. A leader that serves no page is a
// final error.
func (w *watcher) leaderPage(ctx context.Context) (addr, notice string, err error) {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	masters, err := discovery.Masters(rctx, w.etcd, w.namespace)
	switch {
	case err != nil:
		return "", fmt.Sprintf("%v; trying again", err), nil
	case len(masters) == 0:
		return "", fmt.Sprintf("no master leads the job in namespace %q yet; waiting", w.namespace), nil
	case masters[0].HTTP == "":
		return "", "", final("the leading master (%s) serves no status page: start the masters with -http-addr, or give -addr", describeMaster(masters[0]))
	}
	return masters[0].HTTP, "", nil
}

func describeMaster(m discovery.Master) string {
	if m.PID != 0 {
		return fmt.Sprintf("%s, pid %d", m.Host, m.PID)
	}
	return m.Host
}

// screen shows statuses: redrawn in place on a terminal, as lines
// elsewhere.
type screen struct {
	out      io.Writer
	terminal *os.File // nil: plain lines
	interval time.Duration
	drawn    int    // lines of the view on the terminal now
	last     string // plain: the last line printed
	// What the terminal shows: the last status, from where, when it came,
	// and the latest notice ("" once a status came after it).
	st       *monitor.Status
	addr     string
	received time.Time
	note     string
}

func newScreen(out io.Writer, plain bool, interval time.Duration) *screen {
	s := &screen{out: out, interval: interval}
	if f, ok := out.(*os.File); ok && !plain {
		if _, _, ok := terminalSize(f); ok {
			s.terminal = f
		}
	}
	return s
}

func (s *screen) show(st monitor.Status, addr string, now time.Time) {
	s.st, s.addr, s.received, s.note = &st, addr, now, ""
	if s.terminal == nil {
		if st.Job == nil || !st.Job.AllDone { // done says it
			s.line(summary(st))
		}
		return
	}
	s.redraw()
}

func (s *screen) notice(msg string) {
	if msg == "" {
		return
	}
	s.note = msg
	if s.terminal == nil {
		s.line(msg)
		return
	}
	s.redraw()
}

// done ends the view with the final line.
func (s *screen) done(st monitor.Status) {
	j := st.Job
	msg := fmt.Sprintf("all %d passes done: %d tasks, %d records a pass", j.Passes, j.Tasks, j.Records)
	if j.Failed > 0 {
		msg += fmt.Sprintf("; %d tasks discarded in the last pass", j.Failed)
	}
	s.drawn = 0 // the view stays above the line
	fmt.Fprintln(s.out, msg)
}

// line prints a plain line unless it is the last one printed again.
func (s *screen) line(l string) {
	if l = printable(l); l != s.last {
		s.last = l
		fmt.Fprintln(s.out, l)
	}
}

// redraw draws the view over the last one: the cursor goes up the lines
// drawn, and the screen below it is cleared.
func (s *screen) redraw() {
	cols, rows, _ := terminalSize(s.terminal)
	if cols <= 0 {
		cols = 80
	}
	// A line as wide as the terminal may wrap, and the cursor would not
	// come back up far enough: keep one column free.
	width := max(cols-1, minWidth)
	lines := []string{fitWidth(fmt.Sprintf("master watch: %s every %v; Ctrl-C to stop", s.where(), s.interval), width)}
	if s.st != nil {
		// now in the master's clock: its time, plus what has passed here.
		lines = append(lines, render(*s.st, width, s.st.Time.Add(time.Since(s.received)))...)
	}
	if s.note != "" {
		lines = append(lines, fitWidth("! "+s.note, width))
	}
	if rows > 1 && len(lines) > rows-1 {
		lines = lines[:rows-1]
	}
	var b strings.Builder
	if s.drawn > 0 {
		fmt.Fprintf(&b, "\r\x1b[%dA", s.drawn)
	}
	b.WriteString("\x1b[J")
	for _, l := range lines {
		b.WriteString(l)
		b.WriteString("\n")
	}
	_, _ = io.WriteString(s.out, b.String())
	s.drawn = len(lines)
}

func (s *screen) where() string {
	if s.addr == "" {
		return "the leading master's page, from etcd,"
	}
	return s.addr
}

// The view. render and summary are pure: the same status, width and time
// give the same text.

const (
	shownTrainers = 5  // the slowest, in the view and the summary
	minWidth      = 20 // narrower terminals are drawn 20 wide, and wrap
	maxBar        = 50 // the progress bar's widest
	nameColumn    = 24 // trainer names longer than this are cut in the view
)

// render returns the lines of the view of st at now (in the master's
// clock), each at most width runes.
func render(st monitor.Status, width int, now time.Time) []string {
	width = max(width, minWidth)
	var lines []string
	add := func(format string, args ...any) { lines = append(lines, fitWidth(fmt.Sprintf(format, args...), width)) }
	lead := "leader   " + leaderText(st)
	if !st.Leading {
		lead = "this master stands by; leader " + leaderText(st)
	}
	if age := now.Sub(st.Time); age >= 2*time.Second {
		lead += fmt.Sprintf(" (status from %s ago)", formatDuration(age.Seconds()))
	}
	add("%s", lead)
	j := st.Job
	switch {
	case j == nil && st.Leading:
		add("job      none yet: waiting for a trainer to report the dataset")
		return lines
	case j == nil:
		add("job      shown by the leader's page (watch without -addr finds it through etcd)")
		return lines
	}
	if j.RecordsPerTask > 0 {
		add("dataset  index range: %d tasks of %d records, %d records a pass", j.Tasks, j.RecordsPerTask, j.Records)
	} else {
		add("dataset  %s: %d files, %d tasks of %d chunks, %d records a pass", strings.Join(j.Dataset, ","), j.Files, j.Tasks, j.ChunksPerTask, j.Records)
	}
	if j.AllDone {
		add("passes   all %d done", j.Passes)
	} else {
		head := fmt.Sprintf("pass %d/%d ", j.Pass+1, j.Passes)
		tail := fmt.Sprintf(" %3d%%  %d/%d records", percent(j), j.RecordsDone, j.Records)
		bar := min(max(width-utf8.RuneCountInString(head+tail)-2, 10), maxBar)
		add("%s[%s]%s", head, progressBar(j, bar), tail)
		add("rate     %s rec/s   eta pass %s, job %s", formatRate(j.RecordsPerSecond), formatETA(j.PassETASeconds), formatETA(j.JobETASeconds))
		add("queues   todo %d  pending %d  done %d  failed %d  (of %d tasks)", j.Todo, j.Pending, j.Done, j.Failed, j.Tasks)
	}
	for _, d := range st.Datasets { // the others than train, one line each
		if d.AllDone {
			passes := fmt.Sprintf("%d passes", d.Passes)
			if d.Passes == 1 {
				passes = "1 pass"
			}
			add("%-8s round %d done (%s)", d.Name, d.Round+1, passes)
		} else {
			add("%-8s round %d, pass %d/%d %3d%%  %d/%d records, todo %d pending %d done %d failed %d", d.Name, d.Round+1,
				d.Pass+1, d.Passes, percent(&d), d.RecordsDone, d.Records, d.Todo, d.Pending, d.Done, d.Failed)
		}
	}
	shown := st.Trainers[:min(len(st.Trainers), shownTrainers)]
	if len(shown) == 0 {
		add("trainers none yet")
		return lines
	}
	head := fmt.Sprintf("trainers the %d slowest of %d", len(shown), st.TrainersTotal)
	if len(shown) == st.TrainersTotal {
		head = fmt.Sprintf("trainers all %d, slowest first", st.TrainersTotal)
	}
	if shown[0].Stalled { // stalled ones come first
		head += " (! stalled)"
	}
	add("%s", head)
	name := 0
	for _, tr := range shown {
		name = max(name, min(utf8.RuneCountInString(tr.Name), nameColumn))
	}
	for _, tr := range shown {
		mark := " "
		if tr.Stalled {
			mark = "!"
		}
		add("  %s %s %7s rec/s%s", mark, padRight(fitWidth(tr.Name, name), name), formatRate(tr.RecordsPerSecond), trainerDetail(tr, now))
	}
	return lines
}

// trainerDetail is what a trainer does, after its rate.
func trainerDetail(tr monitor.TrainerStatus, now time.Time) string {
	var parts []string
	if tr.Task != nil {
		held := fmt.Sprintf("task %d for %s", tr.Task.Index, formatDuration(tr.Task.HeldSeconds))
		if d := tr.Task.Dataset; d != "" && d != wire.DefaultDataset {
			held = d + " " + held
		}
		if tr.Holding > 1 {
			held += fmt.Sprintf(" (+%d more)", tr.Holding-1)
		}
		parts = append(parts, held)
	}
	if tr.Stalled {
		parts = append(parts, "stalled, silent "+formatDuration(now.Sub(tr.LastSeen).Seconds()))
	}
	if tr.Failures > 0 {
		parts = append(parts, fmt.Sprintf("%d failed", tr.Failures))
	}
	if tr.Timeouts > 0 {
		parts = append(parts, fmt.Sprintf("%d timed out", tr.Timeouts))
	}
	if len(parts) == 0 {
		return ""
	}
	return "  " + strings.Join(parts, ", ")
}

// summary is the plain line of st.
func summary(st monitor.Status) string {
	var parts []string
	j := st.Job
	switch {
	case !st.Leading:
		parts = append(parts, "this master stands by")
	case j == nil:
		parts = append(parts, "no job yet: waiting for a trainer to report the dataset")
	case j.AllDone:
		parts = append(parts, fmt.Sprintf("all %d passes done", j.Passes))
	default:
		parts = append(parts,
			fmt.Sprintf("pass %d/%d %d%%", j.Pass+1, j.Passes, percent(j)),
			formatRate(j.RecordsPerSecond)+" rec/s",
			fmt.Sprintf("eta pass %s job %s", formatETA(j.PassETASeconds), formatETA(j.JobETASeconds)))
	}
	if j != nil && !j.AllDone {
		parts = append(parts, fmt.Sprintf("todo %d pending %d done %d failed %d", j.Todo, j.Pending, j.Done, j.Failed))
	}
	if n := min(len(st.Trainers), shownTrainers); n > 0 {
		slow := make([]string, n)
		for i, tr := range st.Trainers[:n] {
			stalled := ""
			if tr.Stalled {
				stalled = "stalled, "
			}
			slow[i] = fmt.Sprintf("%s (%s%s rec/s)", tr.Name, stalled, formatRate(tr.RecordsPerSecond))
		}
		parts = append(parts, "slowest: "+strings.Join(slow, ", "))
	}
	parts = append(parts, "leader "+leaderText(st))
	return strings.Join(parts, " | ")
}

// leaderText names the leading master by its page (and host and pid).
func leaderText(st monitor.Status) string {
	switch {
	case len(st.Masters) > 0 && st.Masters[0].Leading:
		m := st.Masters[0]
		text := describeMaster(m)
		if m.HTTP != "" {
			text = m.HTTP + " (" + text + ")"
		}
		if n := len(st.Masters) - 1; n > 0 {
			text += fmt.Sprintf(", %d standing by", n)
		}
		return text
	case st.MastersError != "":
		return "unknown: " + st.MastersError
	}
	return "unknown"
}

// percent is the share of this pass's records done, 100 only when all are.
func percent(j *monitor.JobStatus) int {
	done, all := j.RecordsDone, j.Records
	if all <= 0 { // no records: count tasks
		done, all = int64(j.Done), int64(j.Tasks)
	}
	if all <= 0 {
		return 0
	}
	return int(min(max(100*done/all, 0), 100))
}

// progressBar is width cells, as many '#' as the share of the pass done.
func progressBar(j *monitor.JobStatus, width int) string {
	full := min(max(percent(j)*width/100, 0), width)
	return strings.Repeat("#", full) + strings.Repeat(".", width-full)
}

// formatETA writes a time left, "unknown" without one.
func formatETA(secs *float64) string {
	if secs == nil {
		return "unknown"
	}
	return formatDuration(*secs)
}

// formatDuration writes seconds compactly: "45s", "1m05s", "2h03m",
// "3d04h".
func formatDuration(secs float64) string {
	if math.IsNaN(secs) || math.IsInf(secs, 0) || secs < 0 || secs > 1e9 {
		return "unknown"
	}
	s := int64(math.Round(secs))
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	case s < 100*3600:
		return fmt.Sprintf("%dh%02dm", s/3600, s%3600/60)
	}
	return fmt.Sprintf("%dd%02dh", s/86400, s%86400/3600)
}

// formatRate writes records per second: whole ones, one decimal under 10.
func formatRate(r float64) string {
	if r > 0 && r < 10 {
		return fmt.Sprintf("%.1f", r)
	}
	return fmt.Sprintf("%.0f", r)
}

// fitWidth cuts s to width runes, the last one an ellipsis when cut, and
// makes it printable.
func fitWidth(s string, width int) string {
	s = printable(s)
	if utf8.RuneCountInString(s) <= width {
		return s
	}
	r := []rune(s)
	return string(r[:max(width-1, 0)]) + "…"
}

// padRight pads s with spaces to width runes.
func padRight(s string, width int) string {
	return s + strings.Repeat(" ", max(width-utf8.RuneCountInString(s), 0))
}

// printable replaces control characters (an escape sequence in a name
// would drive the terminal) and invalid UTF-8.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if r == utf8.RuneError || unicode.IsControl(r) {
			return '?'
		}
		return r
	}, s)
}
