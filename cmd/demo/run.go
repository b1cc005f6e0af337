package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/rpc"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/trainmaster/master/go/client"
	"github.com/trainmaster/master/go/dataset"
	"github.com/trainmaster/master/go/recordio"
	"github.com/trainmaster/master/go/wire"
)

func run(ctx context.Context, o options, out io.Writer) error {
	dir, err := os.MkdirTemp("", "trainmaster-demo-")
	if err != nil {
		return err
	}
	if o.keep {
		fmt.Fprintf(out, "working directory: %s\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	pattern, err := writeSample(dir, o.files, o.records)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "dataset: %d files x %d records in %s\n", o.files, o.records, filepath.Dir(pattern))

	m, err := startMaster(ctx, o, dir, out)
	if err != nil {
		return err
	}
	defer m.stop()
	fmt.Fprintf(out, "master serving on %s\n", m.addr)

	results := &consumed{tasks: map[[2]int][]taskLine{}}
	trainers := make([]*process, o.trainers)
	for i := range trainers {
		args := []string{"-addr", m.addr, "-dataset", pattern, "-json", "-record-delay", o.recordDelay.String()}
		switch i {
		case 0:
			args = append(args, "-stall-after", "3") // its 3rd task never finishes
		case 1:
			args = append(args, "-fail-after", "2") // its 2nd task is reported failed
		}
		if trainers[i], err = startTrainer(ctx, o.bin, args, filepath.Join(dir, fmt.Sprintf("trainer-%d.log", i)), results); err != nil {
			return err
		}
		defer trainers[i].kill()
	}
	fmt.Fprintf(out, "%d trainers started: trainer 0 will stall on its 3rd task, trainer 1 will fail its 2nd\n", o.trainers)

	if err := showProgress(ctx, m.addr, o.progressInt, out); err != nil {
		return err
	}
	for i, t := range trainers[1:] {
		if err := t.wait(30 * time.Second); err != nil {
			return fmt.Errorf("trainer %d: %w (log in %s)", i+1, err, t.log)
		}
	}
	trainers[0].kill() // the staller is still stuck in its stall
	return verify(pattern, o.chunkTask, o.passes, results, out)
}

// writeSample writes files of records records each, in chunks of about 4 KiB.
func writeSample(dir string, files, records int) (string, error) {
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o755); err != nil {
		return "", err
	}
	for f := range files {
		path := filepath.Join(data, fmt.Sprintf("part-%03d.recordio", f))
		file, err := os.Create(path)
		if err != nil {
			return "", err
		}
		w := recordio.NewWriter(file, recordio.WithMaxChunkBytes(4096))
		for r := range records {
			if err := w.Write(fmt.Appendf(nil, "file %03d record %06d: an example worth training on", f, r)); err != nil {
				file.Close()
				return "", err
			}
		}
		if err := w.Close(); err != nil {
			file.Close()
			return "", err
		}
		if err := file.Close(); err != nil {
			return "", err
		}
	}
	return filepath.Join(data, "part-*.recordio"), nil
}

// process is a child process of the demo.
type process struct {
	cmd  *exec.Cmd
	log  string
	done chan error
}

func (p *process) wait(limit time.Duration) error {
	select {
	case err := <-p.done:
		p.done <- err
		return err
	case <-time.After(limit):
		return fmt.Errorf("still running after %v", limit)
	}
}

func (p *process) kill() {
	p.cmd.Process.Signal(syscall.SIGTERM)
	if p.wait(5*time.Second) != nil {
		p.cmd.Process.Kill()
	}
}

type master struct {
	*process
	addr string
}

func (m *master) stop() { m.kill() }

var addrField = regexp.MustCompile(`addr="?([^" ]+)`)

// startMaster starts the master on a free loopback port and relays its
// decisions (info lines and above) to out.
func startMaster(ctx context.Context, o options, dir string, out io.Writer) (*master, error) {
	logPath := filepath.Join(dir, "master.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, filepath.Join(o.bin, "master"), "-addr", "127.0.0.1:0",
		"-passes", strconv.Itoa(o.passes), "-chunks-per-task", strconv.Itoa(o.chunkTask),
		"-task-timeout-min", o.timeoutMin.String(), "-log-level", "info")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start master: %w (build it with make build)", err)
	}
	p := &process{cmd: cmd, log: logPath, done: make(chan error, 1)}
	addr := make(chan string, 1)
	go func() {
		lines := bufio.NewScanner(stderr)
		for lines.Scan() {
			line := lines.Text()
			fmt.Fprintln(logFile, line)
			if m := addrField.FindStringSubmatch(line); m != nil && strings.Contains(line, "serving trainers") {
				addr <- m[1]
			}
			if strings.Contains(line, "dataset accepted") || strings.Contains(line, "pass ") ||
				strings.Contains(line, "timed out") || strings.Contains(line, "failed") {
				fmt.Fprintln(out, "  master | "+line)
			}
		}
		logFile.Close()
		p.done <- cmd.Wait()
	}()
	select {
	case a := <-addr:
		return &master{process: p, addr: a}, nil
	case err := <-p.done:
		return nil, fmt.Errorf("master exited: %v (log in %s)", err, logPath)
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		return nil, fmt.Errorf("master did not start serving (log in %s)", logPath)
	}
}

// taskLine is what cmd/trainer -json prints for each task it consumed.
type taskLine struct {
	Pass    int    `json:"pass"`
	Task    *int   `json:"task"`
	Records int64  `json:"records"`
	Bytes   int64  `json:"bytes"`
	Digest  string `json:"digest"`
}

type consumed struct {
	mu    sync.Mutex
	tasks map[[2]int][]taskLine
}

func startTrainer(ctx context.Context, bin string, args []string, logPath string, results *consumed) (*process, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "trainer"), args...)
	cmd.Stderr = logFile
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start trainer: %w (build it with make build)", err)
	}
	p := &process{cmd: cmd, log: logPath, done: make(chan error, 1)}
	go func() {
		lines := bufio.NewScanner(stdout)
		for lines.Scan() {
			var l taskLine
			if json.Unmarshal(lines.Bytes(), &l) == nil && l.Task != nil {
				results.mu.Lock()
				results.tasks[[2]int{l.Pass, *l.Task}] = append(results.tasks[[2]int{l.Pass, *l.Task}], l)
				results.mu.Unlock()
			}
		}
		p.done <- cmd.Wait()
		logFile.Close()
	}()
	return p, nil
}

// showProgress prints the master's progress until every pass is done.
func showProgress(ctx context.Context, addr string, every time.Duration, out io.Writer) error {
	c, err := rpc.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	var last wire.Status
	lastAt := time.Now()
	for {
		var st wire.Status
		if err := c.Call("Master.Status", 0, &st); err != nil {
			return fmt.Errorf("master status: %w", err)
		}
		if st.AllDone {
			fmt.Fprintf(out, "all %d passes done\n", st.Passes)
			return nil
		}
		if st.DatasetReported {
			rate := 0.0
			if st.Pass == last.Pass {
				rate = float64(st.RecordsDone-last.RecordsDone) / time.Since(lastAt).Seconds()
			}
			fmt.Fprintf(out, "pass %d/%d | tasks done %d/%d, pending %d, todo %d, failed %d | %.0f records/s\n",
				st.Pass+1, st.Passes, st.Done, st.Tasks, st.Pending, st.Todo, st.Failed, rate)
		}
		last, lastAt = st, time.Now()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(every):
		}
	}
}

// verify checks that every task of every pass was consumed, each time with
// exactly the records the dataset holds for it.
func verify(pattern string, chunksPerTask, passes int, results *consumed, out io.Writer) error {
	ds, err := dataset.Build([]string{pattern}, chunksPerTask)
	if err != nil {
		return err
	}
	dup := 0
	for task := range ds.NumTasks() {
		want, err := taskDigest(ds, task)
		if err != nil {
			return err
		}
		for pass := range passes {
			lines := results.tasks[[2]int{pass, task}]
			if len(lines) == 0 {
				return fmt.Errorf("verification FAILED: task %d of pass %d was never consumed", task, pass)
			}
			for _, l := range lines {
				if l.Records != want.Records || l.Digest != want.String() {
					return fmt.Errorf("verification FAILED: task %d of pass %d consumed as %d records %s, want %d %s",
						task, pass, l.Records, l.Digest, want.Records, want.String())
				}
			}
			dup += len(lines) - 1
		}
	}
	fmt.Fprintf(out, "verification passed: every record of every pass consumed (%d passes x %d records in %d tasks; %d tasks consumed twice after a timeout)\n",
		passes, ds.NumRecords(), ds.NumTasks(), dup)
	return nil
}

func taskDigest(ds *dataset.Dataset, task int) (client.Digest, error) {
	var refs []recordio.ChunkRef
	for _, b := range ds.Blocks(task) {
		refs = append(refs, recordio.ChunkRef{Path: b.Path, Chunk: b.Idx, Offset: b.Offset})
	}
	return client.DigestRecords(recordio.NewScanner(refs), nil)
}
