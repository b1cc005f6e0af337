package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/trainmaster/master/internal/etcdembed/etcdtest"
	"github.com/trainmaster/master/internal/monitor"
	"github.com/trainmaster/master/internal/statusweb"
	"github.com/trainmaster/master/internal/trainerport/porttest"
)

// The watch against a side door in this process: a standby's, with the
// locks of the real door.

// watchDoor serves a standby master's side door on loopback, locked as
// cfg says, and returns its address.
func watchDoor(t *testing.T, cfg statusweb.Config) string {
	t.Helper()
	quiet := logrus.New()
	quiet.SetOutput(io.Discard)
	cfg.Monitor, cfg.Log = monitor.New(monitor.Config{}), quiet
	door, err := statusweb.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(door.Handler())
	if srv.TLS = cfg.TLS; srv.TLS != nil {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// TestWatchLocks: a page that wants a token, TLS or a client certificate
// the watch does not have ends it at once with an error naming the page
// and the flag to give; with them all it watches (a standby, until the
// time given runs out, which ends it as Ctrl-C does: no error).
func TestWatchLocks(t *testing.T) {
	certs, other := etcdtest.GenerateCerts(t), etcdtest.GenerateCerts(t)
	dir := t.TempDir()
	tokenFile, wrongFile := filepath.Join(dir, "token"), filepath.Join(dir, "wrong")
	for path, token := range map[string]string{tokenFile: "s3cret\n", wrongFile: "guess\n"} {
		if err := os.WriteFile(path, []byte(token), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	serverTLS := func(clientCA string) statusweb.Config {
		port := porttest.TLS(t, certs.ServerCert, certs.ServerKey, clientCA)
		return statusweb.Config{TLS: statusweb.ServerTLS(port)}
	}
	plain := watchDoor(t, statusweb.Config{})
	tokened := watchDoor(t, statusweb.Config{Token: "s3cret"})
	tlsDoor := watchDoor(t, serverTLS(""))
	locked := serverTLS(certs.CAFile)
	locked.Token = "s3cret"
	lockedDoor := watchDoor(t, locked)

	for _, tc := range []struct {
		name string
		args []string
		want string // in the error; "" for none
	}{
		{"no token", []string{"-addr", tokened}, "the status page http://" + tokened + "/status.json wants the master's token: give -token-file"},
		{"a wrong token", []string{"-addr", tokened, "-token-file", wrongFile}, "the status page http://" + tokened + "/status.json refused the token of -token-file"},
		{"the right token", []string{"-addr", tokened, "-token-file", tokenFile}, ""},
		{"HTTP to HTTPS", []string{"-addr", tlsDoor}, "the status page at " + tlsDoor + " speaks HTTPS: give -tls-ca"},
		{"HTTPS to HTTP", []string{"-addr", plain, "-tls-ca", certs.CAFile}, "the status page https://" + plain + "/status.json speaks plain HTTP, not HTTPS: drop -tls-ca"},
		{"another CA", []string{"-addr", tlsDoor, "-tls-ca", other.CAFile}, "the certificate of the status page https://" + tlsDoor + "/status.json is not to be trusted: x509: certificate signed by unknown authority"},
		{"the right CA", []string{"-addr", tlsDoor, "-tls-ca", certs.CAFile}, ""},
		{"no client certificate", []string{"-addr", lockedDoor, "-tls-ca", certs.CAFile, "-token-file", tokenFile}, "the status page https://" + lockedDoor + "/status.json wants a client certificate signed by the master's client CA: give -tls-cert and -tls-key"},
		{"another client certificate", []string{"-addr", lockedDoor, "-tls-ca", certs.CAFile, "-tls-cert", other.ClientCert, "-tls-key", other.ClientKey, "-token-file", tokenFile}, "refused the client certificate of -tls-cert"},
		{"every lock open", []string{"-addr", lockedDoor, "-tls-ca", certs.CAFile, "-tls-cert", certs.ClientCert, "-tls-key", certs.ClientKey, "-token-file", tokenFile}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A watch that gets in prints its first line and is stopped
			// there, as by Ctrl-C; one refused gives up at once, long
			// before the 10 s it would otherwise keep trying.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			out := &stopAtFirstLine{stop: cancel}
			var stderr bytes.Buffer
			start := time.Now()
			err := runWatch(ctx, append(tc.args, "-interval", "100ms"), out, &stderr)
			if tc.want == "" {
				if err != nil || out.String() != "this master stands by | leader unknown\n" {
					t.Errorf("error %v, output %q, stderr %q", err, out.String(), stderr.String())
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q; output %q", err, tc.want, out.String())
			}
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("took %v to give up: not at the first answer", took)
			}
		})
	}
}

// stopAtFirstLine collects what a watch in this process prints, and stops
// it (cancels its context) at the first write.
type stopAtFirstLine struct {
	bytes.Buffer
	stop func()
}

func (w *stopAtFirstLine) Write(p []byte) (int, error) {
	defer w.stop()
	return w.Buffer.Write(p)
}

// TestWatchFlags: flag errors, and the master's own environment, whose
// MASTER_ADDR and MASTER_TLS_* are its trainer port's, not the watch's.
func TestWatchFlags(t *testing.T) {
	t.Setenv("MASTER_ADDR", ":8080")
	t.Setenv("MASTER_TLS_CERT", "server.pem")
	t.Setenv("MASTER_NAMESPACE", "/jobs/a")
	o, err := parseWatchFlags(nil, io.Discard)
	if err != nil || o.addr != "" || o.tlsCert != "" || o.namespace != "/jobs/a" || o.interval != time.Second || o.plain {
		t.Errorf("options %+v, error %v", o, err)
	}
	for args, want := range map[string]string{
		"-interval 0":                        "-interval must be positive",
		"-tls-cert c.pem":                    "give -tls-cert and -tls-key together",
		"-tls-cert c.pem -tls-key k.pem":     "-tls-cert needs -tls-ca",
		"-addr a:1 extra":                    "unexpected arguments",
		"-addr a:1 -token-file /nonexisting": "-token-file: open /nonexisting",
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := runWatch(ctx, strings.Fields(args), io.Discard, io.Discard)
		cancel()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", args, err, want)
		}
	}
}

// The watch binary, as people run it.

// watchProc is `master watch` running as a process, its stdout's lines
// collected (when it is a pipe).
type watchProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	stderr bytes.Buffer
	mu     sync.Mutex
	lines  []string
	exited chan struct{}
	err    error // of Wait, once exited is closed
}

// startWatch runs the watch binary with args, its stdout a pipe, or out
// when not nil.
func startWatch(t *testing.T, out *os.File, args ...string) *watchProc {
	t.Helper()
	w := &watchProc{t: t, cmd: exec.Command(binPath, append([]string{"watch"}, args...)...), exited: make(chan struct{})}
	w.cmd.Stderr = &w.stderr
	var stdout io.Reader
	if out != nil {
		w.cmd.Stdout = out
	} else {
		var err error
		if stdout, err = w.cmd.StdoutPipe(); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(w.exited)
		if stdout != nil {
			for lines := bufio.NewScanner(stdout); lines.Scan(); {
				w.mu.Lock()
				w.lines = append(w.lines, lines.Text())
				w.mu.Unlock()
			}
		}
		w.err = w.cmd.Wait()
	}()
	t.Cleanup(func() {
		w.cmd.Process.Kill()
		<-w.exited
		if t.Failed() {
			t.Logf("watch's output:\n%s\nits stderr:\n%s", lastLines(strings.Join(w.output(), "\n"), 40), w.stderr.String())
		}
	})
	return w
}

func (w *watchProc) output() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.lines...)
}

// awaitLine waits for a line matching re from the line from on, and
// returns its index.
func (w *watchProc) awaitLine(re *regexp.Regexp, from int, limit time.Duration) int {
	w.t.Helper()
	for deadline := time.Now().Add(limit); ; time.Sleep(20 * time.Millisecond) {
		lines := w.output()
		for i := from; i < len(lines); i++ {
			if re.MatchString(lines[i]) {
				return i
			}
		}
		select {
		case <-w.exited:
			w.t.Fatalf("watch exited (%v) before a line matching %q", w.err, re)
		default:
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("no line matching %q after %v", re, limit)
		}
	}
}

// awaitExit waits for the watch to end, and returns its exit code.
func (w *watchProc) awaitExit(limit time.Duration) int {
	w.t.Helper()
	select {
	case <-w.exited:
	case <-time.After(limit):
		w.t.Fatalf("watch still running after %v", limit)
	}
	var exit *exec.ExitError
	if errors.As(w.err, &exit) {
		return exit.ExitCode()
	}
	if w.err != nil {
		w.t.Fatal(w.err)
	}
	return 0
}

// hostPort is the host:port of a status page's URL.
func hostPort(pageURL string) string {
	return strings.TrimSuffix(strings.TrimPrefix(pageURL, "http://"), "/")
}

// TestWatchJobThroughAFailover: the watch binary, its output a pipe (plain
// lines), finds the leader through etcd and shows the passes going, the
// rate, the trainers and the leader; the leader is killed in the second
// pass, the watch says so, finds the new leader when it takes over, and
// ends with exit 0 after the last pass.
func TestWatchJobThroughAFailover(t *testing.T) {
	j := startObservedJob(t, "-passes", "3")
	pattern := writeDataset(t, 4) // 4,000 records, 20 tasks a pass: about 3 s a pass
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errs := j.train(ctx, 3, pattern, 2*time.Millisecond, -1)
	w := startWatch(t, nil, "-endpoints", strings.Join(j.endpoints, ","), "-interval", "200ms")

	leader, standby := regexp.QuoteMeta(hostPort(j.leaderURL())), regexp.QuoteMeta(hostPort(j.standbyURL()))
	progress := `^pass %d/3 \d+%% \| [\d.]+ rec/s \| eta pass \S+ job \S+ \| todo \d+ pending \d+ done \d+ failed 0 \| ` +
		`slowest: trainer-\d \([\d.]+ rec/s\)(, trainer-\d \([\d.]+ rec/s\))* \| leader %s \(`
	i := w.awaitLine(regexp.MustCompile(fmt.Sprintf(progress, 1, leader)), 0, 30*time.Second)
	i = w.awaitLine(regexp.MustCompile(`eta pass \d.* \| slowest: trainer-\d \(\d+ rec/s\), trainer-\d \(\d+ rec/s\), trainer-\d \(\d+ rec/s\) \| leader `+leader+` \(.*1 standing by$`), i, 30*time.Second)
	i = w.awaitLine(regexp.MustCompile(fmt.Sprintf(progress, 2, leader)), i, 30*time.Second)

	j.masters[j.lead].cmd.Process.Kill()
	i = w.awaitLine(regexp.MustCompile(`^the master at `+leader+` does not answer \(.*connection refused\); looking for the leader in etcd$`), i, 10*time.Second)
	i = w.awaitLine(regexp.MustCompile(`^pass [23]/3 .*\| leader `+standby+` \(`), i, 40*time.Second)
	w.awaitLine(regexp.MustCompile(`^all 3 passes done: 20 tasks, 4000 records a pass$`), i, 60*time.Second)
	if code := w.awaitExit(10 * time.Second); code != 0 {
		t.Errorf("watch exited with %d", code)
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	lines := w.output()
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "all 3 passes done") {
		t.Errorf("last line %q", last)
	}
	for i := 1; i < len(lines); i++ {
		if lines[i] == lines[i-1] {
			t.Errorf("line %d printed twice in a row: %q", i, lines[i])
		}
	}
}

// TestWatchFindsNoPage: through etcd, the watch waits for a leader and
// says so; a leader that serves no status page ends it with exit 1 and
// an error that says to start it with -http-addr.
func TestWatchFindsNoPage(t *testing.T) {
	srv, _ := etcdtest.Start(t)
	endpoints := strings.Join(srv.Endpoints(), ",")
	w := startWatch(t, nil, "-endpoints", endpoints, "-namespace", "/jobs/w", "-interval", "100ms")
	w.awaitLine(regexp.MustCompile(`^no master leads the job in namespace "/jobs/w" yet; waiting$`), 0, 20*time.Second)
	startMaster(t, "-endpoints", endpoints, "-namespace", "/jobs/w").awaitServing(30 * time.Second)
	if code := w.awaitExit(20 * time.Second); code != 1 {
		t.Errorf("watch exited with %d, want 1", code)
	}
	if msg := w.stderr.String(); !regexp.MustCompile(`^master: the leading master \(\S+, pid \d+\) serves no status page: start the masters with -http-addr, or give -addr\n$`).MatchString(msg) {
		t.Errorf("stderr %q", msg)
	}
}

// TestWatchInterrupt: SIGINT (Ctrl-C) ends a watch cleanly, exit 0.
func TestWatchInterrupt(t *testing.T) {
	addr := watchDoor(t, statusweb.Config{})
	w := startWatch(t, nil, "-addr", addr, "-interval", "100ms")
	w.awaitLine(regexp.MustCompile(`^this master stands by \| leader unknown$`), 0, 20*time.Second)
	if err := w.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := w.awaitExit(10 * time.Second); code != 0 || w.stderr.Len() > 0 {
		t.Errorf("exit %d, stderr %q", code, w.stderr.String())
	}
}

// openPTY opens a pseudo-terminal of cols x rows: its master side, which
// the test reads, and its slave side, the watch's stdout.
func openPTY(t *testing.T, cols, rows uint16) (ptm, pts *os.File) {
	t.Helper()
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("open /dev/ptmx: %v", err)
	}
	ptm = os.NewFile(uintptr(fd), "/dev/ptmx")
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil { // unlockpt
		ptm.Close()
		t.Fatalf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN) // ptsname
	if err != nil {
		ptm.Close()
		t.Fatalf("ptsname: %v", err)
	}
	name := "/dev/pts/" + strconv.Itoa(n)
	sfd, err := unix.Open(name, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		ptm.Close()
		t.Fatalf("open %s: %v", name, err)
	}
	pts = os.NewFile(uintptr(sfd), name)
	if err := unix.IoctlSetWinsize(sfd, unix.TIOCSWINSZ, &unix.Winsize{Col: cols, Row: rows}); err != nil {
		t.Fatalf("set the window size: %v", err)
	}
	return ptm, pts
}

var cursorUp = regexp.MustCompile(`^\x1b\[(\d+)A`)

// screenRows follows the cursor's row through a terminal's output (a new
// line goes down, "ESC [ n A" goes up n rows) and returns the lowest row
// it reached and how many lines were printed in all.
func screenRows(out string) (lowest, newlines int) {
	row := 0
	for i := 0; i < len(out); i++ {
		switch {
		case out[i] == '\n':
			row++
			newlines++
			lowest = max(lowest, row)
		case out[i] == '\x1b':
			if m := cursorUp.FindStringSubmatch(out[i:]); m != nil {
				n, _ := strconv.Atoi(m[1])
				row = max(row-n, 0)
			}
		}
	}
	return lowest, newlines
}

// TestWatchTerminal: with its stdout a pseudo-terminal, the watch draws
// its view and redraws it in place, within the terminal's width, and
// ends with exit 0 after the last pass, its final view and line left on
// the screen.
func TestWatchTerminal(t *testing.T) {
	j := startObservedJob(t, "-passes", "2")
	pattern := writeDataset(t, 2) // 2,000 records, 10 tasks a pass: about 2 s a pass
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ptm, pts := openPTY(t, 100, 40)
	defer ptm.Close()
	w := startWatch(t, pts, "-endpoints", strings.Join(j.endpoints, ","), "-interval", "150ms")
	pts.Close() // the watch holds it: its end closes the terminal's last slave
	var screen bytes.Buffer
	read := make(chan struct{})
	go func() {
		defer close(read)
		io.Copy(&screen, ptm) // ends with EIO once the watch exits
	}()
	errs := j.train(ctx, 2, pattern, 2*time.Millisecond, -1)
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if code := w.awaitExit(20 * time.Second); code != 0 {
		t.Errorf("watch exited with %d; stderr %q", code, w.stderr.String())
	}
	select {
	case <-read:
	case <-time.After(5 * time.Second):
		t.Fatal("the terminal did not close after the watch exited")
	}
	out := screen.String()
	frames := strings.Count(out, "\x1b[J")
	lowest, newlines := screenRows(out)
	t.Logf("%d frames, %d lines printed, the cursor at most %d rows down", frames, newlines, lowest)
	if frames < 5 {
		t.Errorf("%d views drawn in about 4 s at 150 ms", frames)
	}
	if lowest > 15 || newlines < 3*lowest {
		t.Errorf("not redrawn in place: %d lines printed, the cursor went %d rows down", newlines, lowest)
	}
	for _, want := range []string{
		"master watch: " + hostPort(j.leaderURL()) + " every 150ms; Ctrl-C to stop\r\n",
		"leader   " + hostPort(j.leaderURL()) + " (",
		"pass 1/2 [", "pass 2/2 [", " rec/s   eta pass ", "queues   todo ", "trainers all 2, slowest first",
		"passes   all 2 done\r\n",
		"\r\nall 2 passes done: 10 tasks, 2000 records a pass\r\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q on the terminal", want)
		}
	}
	if !strings.HasSuffix(out, "all 2 passes done: 10 tasks, 2000 records a pass\r\n") {
		t.Errorf("the terminal ends with %q", out[max(len(out)-200, 0):])
	}
	for _, l := range regexp.MustCompile(`\x1b\[[0-9]*[AJ]|\r|\n`).Split(out, -1) {
		if n := utf8.RuneCountInString(l); n >= 100 {
			t.Errorf("a line of %d runes on a terminal of 100 columns: %q", n, l)
		}
	}
}
