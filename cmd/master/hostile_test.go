package main

import (
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"net"
	"net/rpc"
	"net/rpc/jsonrpc"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trainmaster/master/go/client"
	"github.com/trainmaster/master/go/recordio"
	"github.com/trainmaster/master/go/wire"
)

// TestHostileClientsDoNotStopTraining runs every attack of issue 9 at once
// against a master process whose port takes a token and which serves its
// own dataset, while four real trainers train: clients holding the token
// fail tasks with 200 KiB reasons (and send 900 KiB ones, over the request
// limit), take tasks and vanish, report absurd
// finishes, pipeline calls without reading the replies and report datasets
// over every limit; clients without it hold idle connections, send garbage
// and call without authenticating. Every record of every pass must be
// trained, the master must keep serving, and its memory and log must stay
// bounded.
func TestHostileClientsDoNotStopTraining(t *testing.T) {
	pattern := writeDataset(t, 4) // 4,000 records
	const passes = 2
	tokenFile := filepath.Join(t.TempDir(), "token")
	const token = "hostile-test-token"
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	pipelined, bloated := pipelineScript(token, 200_000), bloatedScript(token)
	p, addr := startOnEtcd(t, "-token-file", tokenFile, "-dataset", pattern, "-dataset-root", filepath.Dir(pattern),
		"-passes", fmt.Sprint(passes), "-chunks-per-task", "5", "-task-timeout", "3s", "-task-timeout-min", "1s",
		"-task-timeout-max", "1000", "-log-level", "info")
	pid := p.cmd.Process.Pid
	rssBefore := peakRSS(t, pid)

	ctx, stopAttacks := context.WithCancel(context.Background())
	var attackers sync.WaitGroup
	findings := make(chan error, 64)
	attack := func(name string, fn func(ctx context.Context) error) {
		attackers.Go(func() {
			if err := fn(ctx); err != nil {
				findings <- fmt.Errorf("%s: %w", name, err)
			}
		})
	}
	var failed atomic.Int64
	attack("long failure reasons", func(ctx context.Context) error { return failWithHugeReasons(ctx, addr, token, &failed) })
	attack("tasks taken and abandoned", func(ctx context.Context) error { return abandonTasks(ctx, addr, token, 10) })
	attack("absurd reports", func(ctx context.Context) error { return absurdReports(ctx, addr, token) })
	attack("oversized dataset reports", func(ctx context.Context) error { return oversizedReports(ctx, addr, token) })
	attack("pipelined calls", func(ctx context.Context) error {
		_, err := pipelined.play(ctx, addr, false) // the master stops reading: the write blocks until the end
		return err
	})
	for i := range 8 {
		attack(fmt.Sprintf("bloated requests %d", i), func(ctx context.Context) error {
			n, err := bloated.play(ctx, addr, true)
			if err == nil && n < bloated.calls {
				err = fmt.Errorf("%d replies before the end, want at least %d", n, bloated.calls)
			}
			return err
		})
	}
	attack("JSON-RPC", func(ctx context.Context) error { return jsonAttacks(ctx, addr, token) })
	attack("no token", func(ctx context.Context) error { return unauthenticated(ctx, addr, 200) })

	consumed := &taskDigests{byTask: map[[2]int]client.Digest{}}
	trainers := make(chan error, 4)
	for i := range cap(trainers) {
		go func() { trainers <- train(addr, token, consumed, i) }()
	}
	for range cap(trainers) {
		if err := <-trainers; err != nil {
			t.Error(err)
		}
	}
	stopAttacks()
	attackers.Wait()
	close(findings)
	for err := range findings {
		t.Error(err)
	}

	want, err := client.DigestRecords(recordio.ScanFiles(globbed(t, pattern)...))
	if err != nil {
		t.Fatal(err)
	}
	for pass := range passes {
		if got := consumed.pass(pass); got != want {
			t.Errorf("pass %d: the trainers consumed %+v, the dataset is %+v", pass, got, want)
		}
	}
	if st := authenticatedStatus(t, addr, token); !st.AllDone {
		t.Errorf("status after training: %+v", st)
	}
	grown := peakRSS(t, pid) - rssBefore
	logBytes := len(p.logText())
	t.Logf("%d tasks failed with 200 KiB reasons; master peak RSS %d MiB before the attacks, grown by %d MiB; log %d KiB",
		failed.Load(), rssBefore>>20, grown>>20, logBytes>>10)
	if failed.Load() == 0 {
		t.Error("no task was failed with a huge reason")
	}
	// Eight connections each hold one []string of 250,000 empty paths at a
	// time (one large argument per connection): 4 MB each, doubled by the
	// garbage collector's pacing (measured: 80 to 105 MiB in all, 200 to
	// 220 MiB before a connection was held to one large argument); the rest
	// of the attacks cost about 12 MiB.
	if grown > 192<<20 {
		t.Errorf("the master's peak RSS grew by %d MiB under the attacks", grown>>20)
	}
	if logBytes > 4<<20 {
		t.Errorf("the master logged %d KiB: client strings are not cut", logBytes>>10)
	}
}

// taskDigests holds the digest of each task consumed to the end, by
// {pass, task}; a task consumed twice (it timed out meanwhile) must have
// the same digest both times.
type taskDigests struct {
	mu     sync.Mutex
	byTask map[[2]int]client.Digest
	err    error
}

func (d *taskDigests) add(pass, task int, digest client.Digest) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if old, ok := d.byTask[[2]int{pass, task}]; ok && old != digest && d.err == nil {
		d.err = fmt.Errorf("pass %d task %d consumed twice with different records", pass, task)
	}
	d.byTask[[2]int{pass, task}] = digest
}

func (d *taskDigests) pass(pass int) client.Digest {
	d.mu.Lock()
	defer d.mu.Unlock()
	var sum client.Digest
	for k, digest := range d.byTask {
		if k[0] == pass {
			sum.Combine(digest)
		}
	}
	return sum
}

// train is a real trainer: it consumes every record of every pass through
// go/client, a little slowly, so that the attacks run while it trains.
func train(addr, token string, consumed *taskDigests, i int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := client.New(client.Static(addr), client.Config{Token: token, MinBackoff: 10 * time.Millisecond, MaxBackoff: 200 * time.Millisecond, CallTimeout: 10 * time.Second})
	defer c.Close()
	var task client.Digest
	for rec, err := range c.Records(ctx) {
		if err != nil {
			return fmt.Errorf("trainer %d: %w", i, err)
		}
		task.Add(rec.Data)
		time.Sleep(time.Millisecond)
		if rec.Last {
			consumed.add(rec.Pass, rec.Task, task)
			task = client.Digest{}
		}
	}
	consumed.mu.Lock()
	defer consumed.mu.Unlock()
	return consumed.err
}

func globbed(t *testing.T, pattern string) []string {
	t.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) == 0 {
		t.Fatalf("glob %s: %v %v", pattern, files, err)
	}
	return files
}

// dialAuthenticated opens a connection that has presented the token.
func dialAuthenticated(addr, token string) (*rpc.Client, error) {
	c, err := rpc.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	if err := c.Call("Master.Authenticate", token, new(int)); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func authenticatedStatus(t *testing.T, addr, token string) wire.Status {
	t.Helper()
	c, err := dialAuthenticated(addr, token)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var st wire.Status
	if err := c.Call("Master.Status", 0, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// untilDone repeats round every interval until ctx ends or round fails.
func untilDone(ctx context.Context, interval time.Duration, round func() error) error {
	for {
		if err := round(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
	}
}

// failWithHugeReasons takes tasks and reports them failed with a 200 KiB
// reason, reports failures of tasks it does not hold with one too, and
// sends a failure with a 900 KiB reason, over the request limit.
func failWithHugeReasons(ctx context.Context, addr, token string, failed *atomic.Int64) error {
	c, err := dialAuthenticated(addr, token)
	if err != nil {
		return err
	}
	defer c.Close()
	long, huge := strings.Repeat("reason ", 200<<10/7), strings.Repeat("reason ", 900<<10/7)
	return untilDone(ctx, 30*time.Millisecond, func() error {
		var task wire.Task
		err := c.Call("Master.GetTask", wire.Task{}, &task)
		switch {
		case wire.Is(err, wire.TextAllDone) || wire.Is(err, wire.TextNoTask):
			return nil
		case err != nil:
			return err
		}
		var rep int // the task may have timed out and been done meanwhile
		task.Blocks, task.Error = nil, huge
		if err := c.Call("Master.TaskFailed", task, &rep); err == nil || !strings.Contains(err.Error(), "-max-request-bytes") {
			return fmt.Errorf("failure of task %d with a 900 KiB reason answered %v, %.300v", task.Index, wire.Report(rep), err)
		}
		task.Error = long
		if err := c.Call("Master.TaskFailed", task, &rep); err != nil {
			return fmt.Errorf("failure of task %d answered %v, %v", task.Index, wire.Report(rep), err)
		}
		task.Epoch += 1000 // a report the master refuses ("epoch from the future", unless the task is done), the reason cut
		rep = 0
		if err := c.Call("Master.TaskFailed", task, &rep); wire.Report(rep) == wire.Recorded || err != nil && len(err.Error()) > 8<<10 {
			return fmt.Errorf("failure of task %d with a future epoch answered %v, %.300v", task.Index, wire.Report(rep), err)
		}
		failed.Add(1)
		return nil
	})
}

// abandonTasks takes n tasks, one at a time, and never reports them: the
// master must take each back when it times out.
func abandonTasks(ctx context.Context, addr, token string, n int) error {
	c, err := dialAuthenticated(addr, token)
	if err != nil {
		return err
	}
	defer c.Close()
	taken := 0
	return untilDone(ctx, 200*time.Millisecond, func() error {
		if taken == n {
			return nil
		}
		var task wire.Task
		if err := c.Call("Master.GetTask", wire.Task{}, &task); err == nil {
			taken++
		} else if !wire.Is(err, wire.TextAllDone) && !wire.Is(err, wire.TextNoTask) {
			return err
		}
		return nil
	})
}

// absurdReports reports finishes and failures that match nothing: each must
// be answered, none may change anything.
func absurdReports(ctx context.Context, addr, token string) error {
	c, err := dialAuthenticated(addr, token)
	if err != nil {
		return err
	}
	defer c.Close()
	return untilDone(ctx, 10*time.Millisecond, func() error {
		for _, task := range []wire.Task{
			{Index: 1 << 62, Epoch: 1},
			{Index: -1, Epoch: 1},
			{Index: 0, Epoch: 1 << 40, Pass: 1 << 40},
			{Index: 3, Epoch: -7, Pass: -1},
		} {
			var rep int
			if err := c.Call("Master.TaskFinished", task, &rep); err != nil && !strings.Contains(err.Error(), "task") {
				return fmt.Errorf("finish %+v answered %v", task, err)
			}
			if wire.Report(rep) == wire.Recorded {
				return fmt.Errorf("the absurd finish %+v was recorded", task)
			}
		}
		return nil
	})
}

// oversizedReports reports datasets over every limit, and one outside the
// declared dataset: each is refused with an error naming the limit, and the
// next call on the connection is served.
func oversizedReports(ctx context.Context, addr, token string) error {
	c, err := dialAuthenticated(addr, token)
	if err != nil {
		return err
	}
	defer c.Close()
	for _, tc := range []struct {
		name  string
		paths []string
		want  string
	}{
		{"an 8 MiB path", []string{"/" + strings.Repeat("p", 8<<20)}, "-max-request-bytes"},
		{"200,000 empty paths", make([]string, 200_000), "this master serves the dataset"},
		{"/etc/passwd", []string{"/etc/passwd"}, "this master serves the dataset"},
	} {
		err := c.Call("Master.ReportDataset", tc.paths, new(int))
		if err == nil || !strings.Contains(err.Error(), tc.want) || len(err.Error()) > 8<<10 {
			return fmt.Errorf("report of %s answered %.300v; want an error saying %q", tc.name, err, tc.want)
		}
	}
	var st wire.Status
	return c.Call("Master.Status", 0, &st)
}

// script is a hand-made net/rpc byte stream, encoded before the attack (so
// that the test process's encoding does not compete with the master): the
// Authenticate call, a first round of calls, and a round repeated after it.
// One gob encoder writes all of it, since a stream describes each type once.
type script struct {
	auth, first, again []byte
	calls              int // in each round
}

func newScript(token string, round func(enc *gob.Encoder) int) script {
	var out bytes.Buffer
	enc := gob.NewEncoder(&out)
	cut := func() []byte {
		b := bytes.Clone(out.Bytes())
		out.Reset()
		return b
	}
	enc.Encode(rpc.Request{ServiceMethod: "Master.Authenticate"})
	enc.Encode(token)
	var sc script
	sc.auth = cut()
	sc.calls = round(enc)
	sc.first = cut()
	round(enc)
	sc.again = cut()
	return sc
}

// pipelineScript is n Status calls.
func pipelineScript(token string, n int) script {
	return newScript(token, func(enc *gob.Encoder) int {
		for seq := 1; seq <= n; seq++ {
			enc.Encode(rpc.Request{ServiceMethod: "Master.Status", Seq: uint64(seq)})
			enc.Encode(0)
		}
		return n
	})
}

// bloatedScript is finishes that carry 250,000 empty blocks and dataset
// reports of 250,000 empty paths: each just under the request limit on the
// wire, each many times that if the master built it.
func bloatedScript(token string) script {
	return newScript(token, func(enc *gob.Encoder) int {
		for seq := uint64(1); seq <= 16; seq += 2 {
			enc.Encode(rpc.Request{ServiceMethod: "Master.TaskFinished", Seq: seq})
			enc.Encode(wire.Task{Index: 1 << 40, Epoch: 1, Blocks: make([]wire.Block, 250_000)})
			enc.Encode(rpc.Request{ServiceMethod: "Master.ReportDataset", Seq: seq + 1})
			enc.Encode(make([]string, 250_000))
		}
		return 16
	})
}

// play dials addr, authenticates, waiting for the answer as the contract
// asks (calls sent before it may be refused), then writes the first round
// and, with repeat, the second one until ctx ends, while it reads the
// replies. It returns the number of replies read.
func (sc script) play(ctx context.Context, addr string, repeat bool) (int, error) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	dec := gob.NewDecoder(conn)
	reply := func() (rpc.Response, error) {
		var resp rpc.Response
		err := dec.Decode(&resp)
		if err == nil {
			err = dec.DecodeValue(reflect.Value{}) // the result, dropped
		}
		return resp, err
	}
	if _, err := conn.Write(sc.auth); err != nil {
		return 0, err
	}
	if resp, err := reply(); err != nil || resp.Error != "" {
		return 0, fmt.Errorf("authenticate: %v %s", err, resp.Error)
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	go func() { // writes while the replies are read: the master reads only 16 calls ahead
		if _, err := conn.Write(sc.first); err != nil || !repeat {
			return
		}
		for ctx.Err() == nil {
			if _, err := conn.Write(sc.again); err != nil {
				return
			}
		}
	}()
	answered := 0
	for {
		resp, err := reply()
		if err != nil {
			return answered, nil // the connection ends with the context
		}
		if strings.Contains(resp.Error, "max-request-bytes") {
			return answered, fmt.Errorf("%s was refused for its size: %s", resp.ServiceMethod, resp.Error)
		}
		answered++
	}
}

// unauthenticated holds idle connections open, sends garbage on one and
// calls without the token on another, which must be refused.
func unauthenticated(ctx context.Context, addr string, idle int) error {
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range idle {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return err
		}
		conns = append(conns, c)
	}
	garbage, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	conns = append(conns, garbage)
	garbage.Write(bytes.Repeat([]byte{0xff, 0x00, 0x7f}, 100_000))
	c, err := rpc.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	var task wire.Task
	if err := c.Call("Master.GetTask", wire.Task{}, &task); !wire.Is(err, wire.TextUnauthorized) {
		return fmt.Errorf("GetTask without the token answered %v, task %+v", err, task)
	}
	<-ctx.Done()
	return nil
}

// jsonAttacks calls in JSON-RPC without the token, then with it sends a
// request over the size limit: the first is refused, the second closes the
// connection, and the port serves a new JSON connection after both.
func jsonAttacks(ctx context.Context, addr, token string) error {
	c, err := jsonrpc.Dial("tcp", addr)
	if err != nil {
		return err
	}
	var st wire.Status
	if err := c.Call("Master.Status", 0, &st); !wire.Is(err, wire.TextUnauthorized) {
		c.Close()
		return fmt.Errorf("a JSON call without the token answered %v", err)
	}
	c.Close()
	if c, err = jsonrpc.Dial("tcp", addr); err != nil {
		return err
	}
	defer c.Close()
	if err := c.Call("Master.Authenticate", token, new(int)); err != nil {
		return err
	}
	if err := c.Call("Master.ReportDataset", []string{strings.Repeat("j", 1<<20)}, new(int)); err == nil {
		return errors.New("a 1 MiB JSON request was answered")
	}
	c2, err := jsonrpc.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer c2.Close()
	if err := c2.Call("Master.Authenticate", token, new(int)); err != nil {
		return err
	}
	return c2.Call("Master.Status", 0, &st)
}
