package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pkg/errors"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/trainmaster/master/go/discovery"
	"github.com/trainmaster/master/go/recordio"
	"github.com/trainmaster/master/internal/etcdembed"
	"github.com/trainmaster/master/internal/proc"
)

// cluster is every process of the run.
type cluster struct {
	o        options
	out      io.Writer
	rep      *report
	members  []memberSpec
	initial  string // the etcd cluster's initial-cluster flag
	etcd     []*proc.Proc
	masters  map[string]*proc.Proc
	proxies  map[string]*proxy // each master reaches etcd through its own
	crew     crew              // how the trainers run: independent, or the ranks of a group
	trainers []*proc.Proc      // the trainers now, by index (rank)
	names    []string          // each trainer's name, new at each restart
	starts   int               // trainer processes started
	cli      *clientv3.Client
	pattern  string

	mu      sync.Mutex
	serving map[string]string // address -> master name, from the masters' logs
	events  chan servingEvent
}

type memberSpec struct{ name, client, peer string }

type servingEvent struct {
	name string
	at   time.Time
}

var servingRE = regexp.MustCompile(`msg="leading: serving trainers" addr="?([^" ]+)`)

func run(ctx context.Context, o options, out io.Writer) (*report, error) {
	c := &cluster{o: o, out: out, rep: newReport(), masters: map[string]*proc.Proc{}, proxies: map[string]*proxy{},
		serving: map[string]string{}, events: make(chan servingEvent, 64)}
	defer c.stopAll()
	var err error
	if c.pattern, err = writeDataset(o); err != nil {
		return nil, err
	}
	if err := c.startEtcd(); err != nil {
		return nil, err
	}
	if c.cli, err = clientv3.New(clientv3.Config{Endpoints: c.endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()}); err != nil {
		return nil, err
	}
	defer c.cli.Close()
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	watched := c.rep.watch(wctx, c.cli)
	for i := range 3 {
		if err := c.startMaster(fmt.Sprintf("master-%d", i)); err != nil {
			return nil, err
		}
	}
	c.crew = newCrew(c)
	if err := c.crew.start(); err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "chaos: %d etcd members, 3 masters, %s, %d records x %d passes, seed %d\n",
		len(c.members), c.crew, o.records, o.passes, o.seed)
	start := time.Now()
	if err := c.inject(ctx, start); err != nil {
		return c.rep, err
	}
	c.rep.duration = time.Since(start)
	// Let the watch catch up with the last writes before verifying.
	time.Sleep(time.Second)
	stopWatch()
	<-watched
	model, err := c.crew.model()
	if err != nil {
		return c.rep, err
	}
	return c.rep, c.rep.verify(c.pattern, o, model)
}

func writeDataset(o options) (string, error) {
	dir := filepath.Join(o.dir, "data")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	per := o.records / o.files
	for f := range o.files {
		path := filepath.Join(dir, fmt.Sprintf("part-%03d.recordio", f))
		record := func(i int) []byte { return fmt.Appendf(nil, "file %03d record %07d of the chaos dataset", f, i) }
		if err := recordio.WriteFile(path, per, record, recordio.WithMaxChunkBytes(50*len(record(0)))); err != nil {
			return "", err
		}
	}
	return filepath.Join(dir, "part-*.recordio"), nil
}

func (c *cluster) endpoints() []string {
	var eps []string
	for _, m := range c.members {
		eps = append(eps, "http://"+m.client)
	}
	return eps
}

func (c *cluster) startEtcd() error {
	var initial []string
	for i := range 3 {
		client, err := etcdembed.FreeLoopbackAddr()
		if err != nil {
			return err
		}
		peer, err := etcdembed.FreeLoopbackAddr()
		if err != nil {
			return err
		}
		m := memberSpec{name: fmt.Sprintf("etcd-%d", i), client: client, peer: peer}
		c.members = append(c.members, m)
		initial = append(initial, m.name+"=http://"+peer)
	}
	c.etcd = make([]*proc.Proc, 3)
	c.initial = strings.Join(initial, ",")
	ready := make(chan string, 3)
	for i := range c.members {
		if err := c.startMember(i, ready); err != nil {
			return err
		}
	}
	for range c.members {
		select {
		case <-ready:
		case <-time.After(60 * time.Second):
			return errors.Errorf("etcd cluster not ready within 60 s (logs in %s)", c.o.dir)
		}
	}
	return nil
}

func (c *cluster) startMember(i int, ready chan string) error {
	m := c.members[i]
	args := []string{"-name", m.name, "-data-dir", filepath.Join(c.o.dir, m.name), "-listen-client", m.client,
		"-listen-peer", m.peer, "-initial-cluster", c.initial, "-unsafe-no-fsync"}
	p, err := proc.Start(c.o.dir, filepath.Join(c.o.bin, "etcd-embed"), m.name, args, func(line string) {
		if strings.HasPrefix(line, "ready ") && ready != nil {
			ready <- m.name
		}
	}, nil)
	c.etcd[i] = p
	return err
}

func (c *cluster) startMaster(name string) error {
	px := c.proxies[name]
	if px == nil {
		var targets []string
		for _, m := range c.members {
			targets = append(targets, m.client)
		}
		var err error
		if px, err = newProxy(targets); err != nil {
			return err
		}
		c.proxies[name] = px
	}
	args := []string{"-endpoints", "http://" + px.addr(), "-addr", "127.0.0.1:0", "-ttl", "2",
		"-passes", strconv.Itoa(c.o.passes), "-chunks-per-task", strconv.Itoa(c.o.chunkTask),
		"-task-timeout-min", "2s", "-task-timeout-max", "20", "-etcd-dial-timeout", "30s", "-log-level", "debug", "-stragglers", c.o.stragglers,
		"-task-timeout-factor", strconv.FormatFloat(c.o.timeoutFactor, 'g', -1, 64),
		"-checkpoint-wait", c.o.checkpointWait.String(), "-checkpoints-kept", strconv.Itoa(c.o.checkpointsKept)}
	p, err := proc.Start(c.o.dir, filepath.Join(c.o.bin, "master"), name, args, nil, func(line string) {
		if m := servingRE.FindStringSubmatch(line); m != nil {
			c.mu.Lock()
			c.serving[m[1]] = name
			c.mu.Unlock()
			c.events <- servingEvent{name, time.Now()}
		}
		switch {
		case strings.Contains(line, "fenced write rejected"):
			c.rep.count(&c.rep.rejected)
		case strings.Contains(line, "straggler split"):
			c.rep.count(&c.rep.splits)
		case strings.Contains(line, "straggler backed up"):
			c.rep.count(&c.rep.backups)
		default:
			c.rep.checkpointLine(line)
		}
	})
	c.mu.Lock()
	c.masters[name] = p
	c.mu.Unlock()
	return err
}

// leader returns the master serving now, from the published address.
func (c *cluster) leader(ctx context.Context) (string, *proc.Proc) {
	rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	resp, err := c.cli.Get(rctx, discovery.AddrKey(""))
	if err != nil || len(resp.Kvs) == 0 {
		return "", nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	name := c.serving[string(resp.Kvs[0].Value)]
	return name, c.masters[name]
}

func (c *cluster) stopAll() {
	defer func() {
		for _, px := range c.proxies {
			px.close()
		}
	}()
	for _, t := range c.trainers {
		t.Kill()
	}
	for _, m := range c.masters {
		m.Kill()
	}
	for _, e := range c.etcd {
		if e != nil {
			e.Kill()
		}
	}
}

// inject runs the fault schedule until training is done.
func (c *cluster) inject(ctx context.Context, start time.Time) error {
	rng := rand.New(rand.NewPCG(uint64(c.o.seed), 7))
	kinds := []func(context.Context, *rand.Rand) error{c.killLeader, c.stopLeader, c.cutLeader, c.crew.killTrainer, c.killEtcdMember, c.etcdOutage}
	for {
		wait := time.Duration(float64(3*time.Second) * rng.ExpFloat64() / c.o.intensity)
		deadline := time.Now().Add(max(wait, 200*time.Millisecond))
		for time.Now().Before(deadline) {
			if done, err := c.crew.poll(); done || err != nil {
				return err
			}
			if time.Since(start) > c.o.limit {
				return errors.Errorf("training not finished after %v (logs in %s)", c.o.limit, c.o.dir)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		}
		if err := kinds[rng.IntN(len(kinds))](ctx, rng); err != nil {
			return err
		}
	}
}

func (c *cluster) drainServing() {
	for {
		select {
		case <-c.events:
		default:
			return
		}
	}
}

// awaitFailover waits for a master other than old to start serving.
func (c *cluster) awaitFailover(old string, since time.Time) {
	timeout := time.After(60 * time.Second)
	for {
		select {
		case ev := <-c.events:
			if ev.name != old {
				c.rep.failover(ev.at.Sub(since))
				return
			}
		case <-timeout:
			c.rep.note("no failover within 60 s of a fault of " + old)
			return
		}
	}
}

func (c *cluster) killLeader(ctx context.Context, _ *rand.Rand) error {
	name, p := c.leader(ctx)
	if p == nil {
		return nil
	}
	c.drainServing()
	killed := time.Now()
	c.watchHeld(ctx, "kill -9 master leader", "")
	p.Kill()
	c.rep.fault("kill -9 master leader")
	c.awaitFailover(name, killed)
	return c.startMaster(name) // back as a standby
}

func (c *cluster) stopLeader(ctx context.Context, _ *rand.Rand) error {
	name, p := c.leader(ctx)
	if p == nil {
		return nil
	}
	c.drainServing()
	stopped := time.Now()
	c.watchHeld(ctx, "SIGSTOP master leader past the TTL", "")
	p.Signal(syscall.SIGSTOP)
	c.rep.fault("SIGSTOP master leader past the TTL")
	c.awaitFailover(name, stopped)
	time.Sleep(time.Second)
	p.Signal(syscall.SIGCONT)
	return nil
}

// cutLeader cuts the leader off etcd (its proxy drops every connection)
// until a standby has taken over, then mends the link.
func (c *cluster) cutLeader(ctx context.Context, _ *rand.Rand) error {
	name, p := c.leader(ctx)
	if p == nil {
		return nil
	}
	c.drainServing()
	cut := time.Now()
	c.watchHeld(ctx, "network cut between leader and etcd", "")
	c.proxies[name].setCut(true)
	c.rep.fault("network cut between leader and etcd")
	c.awaitFailover(name, cut)
	time.Sleep(time.Second)
	c.proxies[name].setCut(false)
	return nil
}

func (c *cluster) killEtcdMember(_ context.Context, rng *rand.Rand) error {
	i := rng.IntN(len(c.etcd))
	c.etcd[i].Kill()
	c.rep.fault("kill -9 etcd member")
	time.Sleep(2 * time.Second)
	return c.startMember(i, nil)
}

func (c *cluster) etcdOutage(_ context.Context, _ *rand.Rand) error {
	for _, e := range c.etcd {
		e.Kill()
	}
	c.rep.fault("etcd-wide outage (3 s)")
	time.Sleep(3 * time.Second)
	for i := range c.etcd {
		if err := c.startMember(i, nil); err != nil {
			return err
		}
	}
	return nil
}

// watchHeld tells the report which tasks a fault of kind affects: those
// pending with trainer at that moment (every pending task for ""), read from
// etcd; the report times them until they are back in todo.
func (c *cluster) watchHeld(ctx context.Context, kind, trainer string) {
	at := time.Now()
	rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	resp, err := c.cli.Get(rctx, "/task_queues/train/tasks/", clientv3.WithPrefix())
	if err != nil {
		c.rep.note(fmt.Sprintf("%s: cannot read the held tasks: %v", kind, err))
		return
	}
	held := 0
	for _, kv := range resp.Kvs {
		var e storedEntry
		if json.Unmarshal(kv.Value, &e) != nil || e.Queue != "pending" || (trainer != "" && e.Trainer != trainer) {
			continue
		}
		held++
		c.rep.affect(taskOf(string(kv.Key)), e, kind, at)
	}
	if held == 0 && trainer != "" {
		c.rep.note(fmt.Sprintf("%s: %s held no pending task at %s", kind, trainer, at.Format("15:04:05.000")))
	}
}
