package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/rpc"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pkg/errors"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/trainmaster/master/go/client"
	"github.com/trainmaster/master/go/discovery"
	"github.com/trainmaster/master/go/recordio"
	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/dataset"
	"github.com/trainmaster/master/internal/etcdembed"
	"github.com/trainmaster/master/internal/proc"
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

	etcd, err := etcdembed.Start(ctx, etcdembed.Config{Name: "demo", Dir: filepath.Join(dir, "etcd")})
	if err != nil {
		return err
	}
	defer etcd.Close()
	endpoints := strings.Join(etcd.Endpoints(), ",")
	cli, err := clientv3.New(clientv3.Config{Endpoints: etcd.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return err
	}
	defer cli.Close()
	fmt.Fprintf(out, "embedded etcd serving on %s\n", endpoints)

	masters := &cluster{o: o, dir: dir, endpoints: endpoints, out: out, masters: map[string]*proc.Proc{}, pages: map[string]string{},
		serving: make(chan string, 8)}
	for _, name := range []string{"A", "B"} {
		if err := masters.start(name); err != nil {
			return err
		}
	}
	defer masters.stop()
	fmt.Fprintln(out, "masters A and B started: one leads, the other stands by")
	if leader := <-masters.serving; masters.page(leader) != "" {
		masters.serving <- leader // failover waits for it too
		fmt.Fprintf(out, "status page of the job: %s (master %s leads; /metrics for Prometheus)\n", masters.page(leader), leader)
	}

	results := &consumed{tasks: map[[2]int][]taskLine{}}
	trainers := make([]*proc.Proc, o.trainers)
	for i := range trainers {
		args := []string{"-endpoints", endpoints, "-dataset", pattern, "-json", "-record-delay", o.recordDelay.String(),
			"-name", fmt.Sprintf("trainer-%d", i)}
		switch i {
		case 0:
			args = append(args, "-stall-after", "3") // its 3rd task never finishes
		case 1:
			args = append(args, "-fail-after", "2") // its 2nd task is reported failed
		}
		if trainers[i], err = startTrainer(dir, o.bin, i, args, results); err != nil {
			return err
		}
		defer trainers[i].Stop(5 * time.Second)
	}
	fmt.Fprintf(out, "%d trainers started: trainer 0 will stall on its 3rd task, trainer 1 will fail its 2nd\n", o.trainers)
	if py, err := startPythonTrainer(dir, o, endpoints, pattern, results, out); err != nil {
		return err
	} else if py != nil {
		defer py.Stop(5 * time.Second)
		trainers = append(trainers, py)
	}

	if err := showProgress(ctx, discovery.NewResolver(cli, ""), masters, o.progressInt, out); err != nil {
		return err
	}
	for i, t := range trainers[1:] {
		if err := t.Wait(30 * time.Second); err != nil {
			return errors.Errorf("trainer %d: %v (log in %s)", i+1, err, t.Log)
		}
	}
	trainers[0].Stop(5 * time.Second) // the staller is still stuck in its stall
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
		record := func(r int) []byte {
			return fmt.Appendf(nil, "file %03d record %06d: an example worth training on", f, r)
		}
		if err := recordio.WriteFile(path, records, record, recordio.WithMaxChunkBytes(4096)); err != nil {
			return "", err
		}
	}
	return filepath.Join(data, "part-*.recordio"), nil
}

// cluster is the demo's master processes.
type cluster struct {
	o         options
	dir       string
	endpoints string
	out       io.Writer

	mu      sync.Mutex
	masters map[string]*proc.Proc
	pages   map[string]string // status page URL of each master, as its log says
	leader  string            // name of the master that serves, as its log says
	serving chan string
}

// pageRE finds a master's status page in its log line.
var pageRE = regexp.MustCompile(`msg="status page, [^"]*" .*url="?([^" ]+)`)

// page returns the status page of master name, "" while unknown.
func (c *cluster) page(name string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pages[name]
}

// start starts master name and relays its decisions (info lines and above)
// to the output.
func (c *cluster) start(name string) error {
	args := []string{"-addr", "127.0.0.1:0", "-endpoints", c.endpoints, "-ttl", "2",
		"-passes", strconv.Itoa(c.o.passes), "-chunks-per-task", strconv.Itoa(c.o.chunkTask),
		"-task-timeout-min", c.o.timeoutMin.String(), "-log-level", "info", "-http-addr", c.o.httpAddr(name),
		"-stragglers", "split"} // the end of each pass: idle trainers get a piece of the slowest task
	p, err := proc.Start(c.dir, filepath.Join(c.o.bin, "master"), "master-"+name, args, nil, func(line string) {
		if m := pageRE.FindStringSubmatch(line); m != nil {
			c.mu.Lock()
			c.pages[name] = m[1]
			c.mu.Unlock()
			fmt.Fprintf(c.out, "  master %s | status page and metrics: %s\n", name, m[1])
		}
		if strings.Contains(line, "leading: serving trainers") {
			c.mu.Lock()
			c.leader = name
			c.mu.Unlock()
			c.serving <- name
		}
		if interesting(line) {
			fmt.Fprintf(c.out, "  master %s | %s\n", name, line)
		}
	})
	if err != nil {
		return errors.Errorf("%v (build the binaries with make build)", err)
	}
	c.mu.Lock()
	c.masters[name] = p
	c.mu.Unlock()
	return nil
}

func interesting(line string) bool {
	for _, s := range []string{"dataset accepted", "pass ", "timed out", "failed", "leading", "state restored", "resigned"} {
		if strings.Contains(line, s) {
			return true
		}
	}
	return false
}

// failover kills the serving master with SIGKILL, reports how long the
// standby took to serve, and starts the killed one again as a standby.
func (c *cluster) failover(ctx context.Context) error {
	c.mu.Lock()
	name, p := c.leader, c.masters[c.leader]
	c.mu.Unlock()
	fmt.Fprintf(c.out, "killing master %s (pid %d), the leader, with SIGKILL in the middle of the pass\n", name, p.Pid())
	killed := time.Now()
	p.Kill()
	for timeout := time.After(30 * time.Second); ; {
		select {
		case next := <-c.serving:
			if next == name {
				continue // its own start, from before
			}
			fmt.Fprintf(c.out, "master %s took over %v after the kill (lock TTL 2s); the status page is now %s\n",
				next, time.Since(killed).Round(time.Millisecond), c.page(next))
		case <-timeout:
			return errors.New("no master took over within 30 s of the kill")
		}
		break
	}
	fmt.Fprintf(c.out, "master %s restarted as a standby\n", name)
	return c.start(name)
}

// stop stops every master. It must not hold c.mu while a master stops: a
// standby taking over from the one stopped first logs that it leads, and
// the relay of that line takes c.mu; holding it here kept that master's
// output from draining, so it never finished exiting.
func (c *cluster) stop() {
	c.mu.Lock()
	procs := make([]*proc.Proc, 0, len(c.masters))
	for _, p := range c.masters {
		procs = append(procs, p)
	}
	c.mu.Unlock()
	for _, p := range procs {
		p.Stop(5 * time.Second)
	}
}

// taskLine is what cmd/trainer -json prints for each task it consumed.
type taskLine struct {
	Pass    int    `json:"pass"`
	Task    *int   `json:"task"`
	From    int    `json:"from"` // the position of its first record consumed: a task resumed, or a piece of it
	Records int64  `json:"records"`
	Bytes   int64  `json:"bytes"`
	Digest  string `json:"digest"`
}

type consumed struct {
	mu    sync.Mutex
	tasks map[[2]int][]taskLine
}

// record keeps a task line a trainer printed.
func (c *consumed) record(line string) {
	var l taskLine
	if json.Unmarshal([]byte(line), &l) != nil || l.Task == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tasks[[2]int{l.Pass, *l.Task}] = append(c.tasks[[2]int{l.Pass, *l.Task}], l)
}

func startTrainer(dir, bin string, i int, args []string, results *consumed) (*proc.Proc, error) {
	p, err := proc.Start(dir, filepath.Join(bin, "trainer"), fmt.Sprintf("trainer-%d", i), args, results.record, nil)
	if err != nil {
		return nil, errors.Errorf("%v (build the binaries with make build)", err)
	}
	return p, nil
}

// startPythonTrainer starts one more trainer, python -m trainmaster, when
// the interpreter and the package are there, and says whether it did.
func startPythonTrainer(dir string, o options, endpoints, pattern string, results *consumed, out io.Writer) (*proc.Proc, error) {
	pkg := filepath.Join(o.pythonDir, "trainmaster", "__init__.py")
	if o.python == "" {
		return nil, nil
	}
	for _, need := range []string{o.python, pkg} {
		if _, err := os.Stat(need); err != nil {
			fmt.Fprintf(out, "no Python trainer: %v\n", err)
			return nil, nil
		}
	}
	abs, err := filepath.Abs(o.pythonDir)
	if err != nil {
		return nil, err
	}
	os.Setenv("PYTHONPATH", abs) // inherited by the trainer's process
	args := []string{"-m", "trainmaster", "train", "--endpoints", endpoints, "--dataset", pattern, "--json", "--name", "trainer-python",
		"--record-delay", strconv.FormatFloat(o.recordDelay.Seconds(), 'f', -1, 64)}
	p, err := proc.Start(dir, o.python, "trainer-python", args, results.record, nil)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "a Python trainer started too (%s -m trainmaster train, package in %s)\n", o.python, abs)
	return p, nil
}

// showProgress prints the progress of whichever master serves until every
// pass is done; halfway through the second pass (or the only one), or at
// the first sample after it, it kills the leader.
func showProgress(ctx context.Context, resolver *discovery.Resolver, masters *cluster, every time.Duration, out io.Writer) error {
	var last wire.Status
	lastAt, killed := time.Now(), false
	killPass := min(1, masters.o.passes-1)
	for {
		st, err := masterStatus(ctx, resolver)
		switch {
		case err != nil:
			fmt.Fprintf(out, "no master answering (%v)\n", err)
		case st.AllDone:
			fmt.Fprintf(out, "all %d passes done\n", st.Passes)
			return nil
		case st.DatasetReported:
			rate := 0.0
			if st.Pass == last.Pass {
				rate = float64(st.RecordsDone-last.RecordsDone) / time.Since(lastAt).Seconds()
			}
			fmt.Fprintf(out, "pass %d/%d | tasks done %d/%d, pending %d, todo %d, failed %d | %.0f records/s\n",
				st.Pass+1, st.Passes, st.Done, st.Tasks, st.Pending, st.Todo, st.Failed, rate)
			// A fast pass can go by between two samples: then the kill
			// comes in the first sample of a later pass.
			if !killed && (st.Pass == killPass && st.Done >= st.Tasks/2 || st.Pass > killPass) {
				killed = true
				if err := masters.failover(ctx); err != nil {
					return err
				}
			}
			last, lastAt = st, time.Now()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(every):
		}
	}
}

func masterStatus(ctx context.Context, resolver *discovery.Resolver) (wire.Status, error) {
	rctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	addr, err := resolver.Resolve(rctx)
	if err != nil {
		return wire.Status{}, err
	}
	c, err := rpc.Dial("tcp", addr)
	if err != nil {
		return wire.Status{}, err
	}
	defer c.Close()
	var st wire.Status
	return st, c.Call("Master.Status", 0, &st)
}

// verify checks that every record of every task of every pass was
// consumed, each consumption (a whole task, the rest of one resumed, or a
// piece of one) with exactly the records the dataset holds there.
func verify(pattern string, chunksPerTask, passes int, results *consumed, out io.Writer) error {
	ds, err := dataset.Build([]string{pattern}, chunksPerTask)
	if err != nil {
		return err
	}
	dup := 0
	for task := range ds.NumTasks() {
		suffixes, err := taskSuffixes(ds, task)
		if err != nil {
			return err
		}
		n := len(suffixes) - 1
		for pass := range passes {
			covered := make([]int, n)
			for _, l := range results.tasks[[2]int{pass, task}] {
				end := l.From + int(l.Records)
				if l.From < 0 || end > n || l.Records < 1 || l.Digest != suffixes[l.From].Minus(suffixes[end]).String() {
					return errors.Errorf("verification FAILED: task %d of pass %d consumed from record %d as %d records %s, which are not its records there",
						task, pass, l.From, l.Records, l.Digest)
				}
				again := false
				for p := l.From; p < end; p++ {
					covered[p]++
					again = again || covered[p] > 1
				}
				if again {
					dup++
				}
			}
			if p := slices.Index(covered, 0); p >= 0 {
				return errors.Errorf("verification FAILED: record %d of task %d (of %d records) of pass %d was never consumed", p, task, n, pass)
			}
		}
	}
	fmt.Fprintf(out, "verification passed: every record of every pass consumed (%d passes x %d records in %d tasks; %d tasks consumed twice after a timeout)\n",
		passes, ds.NumRecords(), ds.NumTasks(), dup)
	return nil
}

// taskSuffixes returns the digests of the suffixes of a task's records.
func taskSuffixes(ds *dataset.Dataset, task int) ([]client.Digest, error) {
	var refs []recordio.ChunkRef
	for _, b := range ds.Blocks(task) {
		refs = append(refs, recordio.ChunkRef{Path: b.Path, Chunk: b.Idx, Offset: b.Offset})
	}
	return client.SuffixDigests(recordio.NewScanner(refs), nil)
}
