// Package clienttest is a fake master for the tests of trainers and of the
// client library: a real net/rpc server on a loopback port that speaks the
// wire contract over a simple in-memory queue of tasks, with knobs to inject
// the faults a trainer must survive (contract errors, stuck calls, dropped
// connections, a restart on the same port) and a log of what it was told.
//
// Its queue: tasks are runs of Options.ChunksPerTask consecutive chunks of
// the dataset's files in order; a pass hands every task out once, in index
// order, and ends when none is queued or dispatched; a dispatched task goes
// back to the end of the queue after Options.Timeout. It is deliberately
// simpler than the real master and is not a reference for it.
package clienttest

import (
	"net"
	"net/rpc"
	"sync"
	"testing"
	"time"

	"github.com/pkg/errors"

	"github.com/trainmaster/master/go/wire"
)

// Options shape the fake master's queue.
type Options struct {
	Passes        int           // passes over the dataset (default 1)
	ChunksPerTask int           // chunks per task (default 1)
	Timeout       time.Duration // how long a dispatch lasts before the task is queued again; 0: forever
	// RequeueFailed puts a failed task back at the end of the queue; by
	// default it is out of the pass, as if done.
	RequeueFailed bool
	// Seed is the job's shuffle seed: each task handed out carries
	// wire.TaskSeed(Seed, pass, index), as the real master's do (the queue
	// keeps index order). 0: none, file order.
	Seed uint64
	// ProgressMillis is what every task handed out asks of its holder's
	// progress reports (wire.Task.ProgressMillis); 0: nothing.
	ProgressMillis int64
}

// Event is one call the master answered.
type Event struct {
	At     time.Time
	Method string    // without the service name
	Arg    wire.Task // GetTask's finished, or the task reported (Blocks left out)
	// ArgBlocks is how many blocks Arg carried: a client need not send any
	// back.
	ArgBlocks int
	Reply     wire.Task // GetTask's answer (Blocks left out)
	Done      int       // TaskProgress's position (Arg has its Index, Epoch and Pass)
	Report    wire.Report
	Err       string // the error answered
}

// Master is the fake master. Its methods are safe for concurrent use.
type Master struct {
	opt    Options
	srv    *rpc.Server
	addr   string
	closed chan struct{}
	once   sync.Once
	wg     sync.WaitGroup // accept loops and connections

	netMu sync.Mutex
	ln    net.Listener // nil while stopped
	conns map[net.Conn]bool

	mu     sync.Mutex
	q      queue
	faults map[string][]string
	gates  map[string]chan struct{}
	events []Event
}

// Start starts a master on a free loopback port; it is closed when the test
// ends.
func Start(tb testing.TB, opt Options) *Master {
	tb.Helper()
	m, err := New(opt)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(m.Close)
	return m
}

// New starts a master on a free loopback port, for code without a
// testing.TB (an Example); Close stops it.
func New(opt Options) (*Master, error) {
	opt.Passes = max(opt.Passes, 1)
	opt.ChunksPerTask = max(opt.ChunksPerTask, 1)
	m := &Master{
		opt:    opt,
		srv:    rpc.NewServer(),
		closed: make(chan struct{}),
		conns:  map[net.Conn]bool{},
		q:      newQueue(opt),
		faults: map[string][]string{},
		gates:  map[string]chan struct{}{},
	}
	if err := m.srv.RegisterName(wire.ServiceName, &service{m}); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	m.addr = ln.Addr().String()
	m.serve(ln)
	return m, nil
}

// Addr returns the master's address.
func (m *Master) Addr() string { return m.addr }

// Close stops the master for good and waits for its goroutines.
func (m *Master) Close() {
	m.once.Do(func() { close(m.closed) })
	m.Stop()
	m.wg.Wait()
}

// Stop closes the listener and every connection, keeping the queue: calls
// fail as if the master's process died. Restart brings it back.
func (m *Master) Stop() {
	m.netMu.Lock()
	if m.ln != nil {
		m.ln.Close()
		m.ln = nil
	}
	m.netMu.Unlock()
	m.DropConns()
}

// Restart listens again on the same address after Stop.
func (m *Master) Restart() error {
	ln, err := net.Listen("tcp", m.addr)
	if err != nil {
		return err
	}
	m.serve(ln)
	return nil
}

// DropConns closes every open connection; the listener stays.
func (m *Master) DropConns() {
	m.netMu.Lock()
	defer m.netMu.Unlock()
	for c := range m.conns {
		c.Close()
	}
}

func (m *Master) serve(ln net.Listener) {
	m.netMu.Lock()
	m.ln = ln
	m.netMu.Unlock()
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			m.track(c)
		}
	}()
}

func (m *Master) track(c net.Conn) {
	m.netMu.Lock()
	defer m.netMu.Unlock()
	if m.ln == nil { // stopped between Accept and here
		c.Close()
		return
	}
	m.conns[c] = true
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		m.srv.ServeConn(c)
		m.netMu.Lock()
		delete(m.conns, c)
		m.netMu.Unlock()
	}()
}

// Fail makes the next n calls of method ("GetTask", ...) answer an error
// with text (e.g. wire.TextNoTask) before doing anything else.
func (m *Master) Fail(method, text string, n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for range n {
		m.faults[method] = append(m.faults[method], text)
	}
}

// Gate holds every call of method until release is called (or the master
// is closed), then lets them through.
func (m *Master) Gate(method string) (release func()) {
	gate := make(chan struct{})
	m.mu.Lock()
	m.gates[method] = gate
	m.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			m.mu.Lock()
			delete(m.gates, method)
			m.mu.Unlock()
			close(gate)
		})
	}
}

// enter waits at method's gate, if any, and returns with m.mu held and the
// fault to answer, if any.
func (m *Master) enter(method string) error {
	m.mu.Lock()
	gate := m.gates[method]
	m.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-m.closed:
		}
	}
	m.mu.Lock()
	if fs := m.faults[method]; len(fs) > 0 {
		m.faults[method] = fs[1:]
		return errors.New(fs[0])
	}
	return nil
}

// Events returns the calls answered so far, in order.
func (m *Master) Events() []Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Event(nil), m.events...)
}

// Finished says whether a finish of task in pass has been recorded.
func (m *Master) Finished(pass, task int) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.q.finished[[2]int{pass, task}]
}

// AllDone says whether every pass is over.
func (m *Master) AllDone() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.q.allDone
}

// Tasks returns the tasks of the dataset (Epoch and Pass zero), once it is
// reported.
func (m *Master) Tasks() []wire.Task {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]wire.Task(nil), m.q.tasks...)
}
