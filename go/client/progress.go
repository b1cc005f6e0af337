package client

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/trainmaster/master/go/wire"
)

// progress follows how far the loop got in the task it consumes, and
// reports it to the master (wire.Progress) from a goroutine of its own at
// most every Config.ProgressInterval (or, when the client follows the
// master, as often as the task asks: every, ramp), so that the loop never
// waits for the master's commit; stop sends the last position of a task
// left in the middle. A report the master refuses is logged and dropped:
// progress only saves work after a fault, it is never needed. A report
// answered superseded, already done or stale pass says the task is no
// longer this trainer's (it timed out and went to another, or another
// finished it): the loop then drops it at its next record and does not
// report it finished. An answer that moves the task's end (the master cut its rest
// off for an idle trainer: wire.ProgressReply.To) makes the loop stop
// there.
type progress struct {
	c      *Client
	exited chan struct{} // closed when run has returned

	done    atomic.Int64 // the position reached in the task being consumed: the loop stores it after every record
	through atomic.Int64 // the position trained through: done, or one more while the body has a record (checkpoint.go)
	dropped atomic.Bool  // the master said the task is no longer this trainer's
	to      atomic.Int64 // where the loop is to stop in the task being consumed; 0: its end

	began chan time.Duration // the interval of a task begun, when the client follows the master; run restarts its timer

	mu   sync.Mutex
	task wire.Task // the task being consumed; Epoch 0: none
	sent int64     // the position last reported for it
}

func newProgress(c *Client) *progress {
	return &progress{c: c, exited: make(chan struct{}), began: make(chan time.Duration, 1)}
}

// every returns how often to report in t: as t asks when the client
// follows the master (never more often than wire.MinProgressInterval),
// else Config.ProgressInterval.
func (p *progress) every(t wire.Task) time.Duration {
	if !p.c.followsMaster {
		return p.c.cfg.ProgressInterval
	}
	if t.ProgressMillis <= 0 {
		return wire.DefaultProgressInterval
	}
	return max(time.Duration(t.ProgressMillis)*time.Millisecond, wire.MinProgressInterval)
}

// on reports whether the client reports progress.
func (p *progress) on() bool { return p.c.cfg.ProgressInterval > 0 }

// checkAfter is how long a task waits in the prefetch queue before the
// loop checks with the master that it is still this trainer's: the master
// may have handed a task that waited behind a straggling one to an idle
// trainer (its -stragglers). The check is a progress report that moves
// nothing: no write on the master, one round trip per such task.
const checkAfter = time.Second

// checkWait bounds the check: a master that cannot answer in time (a
// failover, an outage) does not stop the training of a task read ahead.
const checkWait = 2 * time.Second

// check asks the master, before the loop starts l, whether l is still
// this trainer's and where it ends, if progress is on and l waited long
// enough to have been handed to another trainer; it reports whether to
// train it. A check that fails, or gets no answer within checkWait, is no
// answer: the task is trained.
func (p *progress) check(ctx context.Context, l *loaded) bool {
	if !p.on() || time.Since(l.fetched) < checkAfter {
		return true
	}
	t := l.task
	ctx, cancel := context.WithTimeout(ctx, checkWait)
	defer cancel()
	reply, err := p.c.TaskProgress(ctx, wire.Progress{Index: t.Index, Epoch: t.Epoch, Pass: t.Pass, Gen: t.Gen, Done: t.From})
	log := p.c.cfg.Log.WithField("task", t.Index).WithField("pass", t.Pass)
	switch {
	case err != nil:
		log.WithError(err).Debug("client: could not check a task that waited; training it")
	case reply.Report == wire.Superseded || reply.Report == wire.AlreadyDone || reply.Report == wire.StalePass:
		log.WithField("report", reply.Report).Info("client: a task that waited went to another trainer; dropping it")
		return false
	case reply.To > 0:
		l.task.To = reply.To
	}
	return true
}

// begin says the loop starts consuming t at position t.From.
func (p *progress) begin(t wire.Task) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.task, p.sent = t, int64(t.From)
	p.done.Store(int64(t.From))
	p.through.Store(int64(t.From))
	p.dropped.Store(false)
	p.to.Store(int64(t.To))
	if p.c.followsMaster {
		select { // the latest task's interval replaces one run has not taken yet
		case <-p.began:
		default:
		}
		p.began <- p.every(t)
	}
}

// reached says the records before position done are trained.
func (p *progress) reached(done int) { p.done.Store(int64(done)) }

// has says the loop body has the record before position through: a
// checkpoint taken now holds it trained.
func (p *progress) has(through int) { p.through.Store(int64(through)) }

// current returns the task being consumed, trained through the record
// the body has, and false when none is.
func (p *progress) current() (wire.Held, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	t := p.task
	if t.Epoch == 0 {
		return wire.Held{}, false
	}
	return wire.Held{Dataset: t.Dataset, Index: t.Index, Epoch: t.Epoch, Pass: t.Pass, Gen: t.Gen, Done: int(p.through.Load())}, true
}

// end says the task is consumed: nothing more to report of it.
func (p *progress) end() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.task = wire.Task{}
}

// run reports the position until ctx ends: every ProgressInterval, or,
// when the client follows the master, from the start of each task after
// wire.MinProgressInterval, then after twice the last wait each time, up
// to the interval the task asks for (ramp): the master hears early of a
// task its trainer started, and so can split it if it straggles, even
// when it could not yet say how often to report (a dispatch of a pass's
// first wave asks nothing: 1 s, 2 s, 4 s, 8 s, then every 10 s).
func (p *progress) run(ctx context.Context) {
	defer close(p.exited)
	if !p.on() {
		return
	}
	interval := p.every(wire.Task{})
	wait := p.ramp(0, interval)
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case <-timer.C:
			p.report(ctx)
			wait = p.ramp(wait, interval)
		case interval = <-p.began:
			timer.Stop()
			wait = p.ramp(0, interval)
		case <-ctx.Done():
			return
		}
		timer.Reset(wait)
	}
}

// ramp returns the wait after last (0: a task's first) towards interval.
func (p *progress) ramp(last, interval time.Duration) time.Duration {
	if !p.c.followsMaster {
		return interval
	}
	return min(max(2*last, wire.MinProgressInterval), interval)
}

// final reports the position of a task the loop left in the middle, once
// run has returned.
func (p *progress) final(ctx context.Context) {
	<-p.exited
	if p.on() {
		p.report(ctx)
	}
}

// report sends the position if it moved since the last report.
func (p *progress) report(ctx context.Context) {
	p.mu.Lock()
	t, done := p.task, p.done.Load()
	moved := t.Epoch != 0 && done > p.sent
	if moved {
		p.sent = done
	}
	p.mu.Unlock()
	if !moved {
		return
	}
	reply, err := p.c.TaskProgress(ctx, wire.Progress{Index: t.Index, Epoch: t.Epoch, Pass: t.Pass, Gen: t.Gen, Done: int(done)})
	r := reply.Report
	log := p.c.cfg.Log.WithField("task", t.Index).WithField("pass", t.Pass).WithField("done", done)
	if err != nil {
		log.WithError(err).Debug("client: progress report not recorded")
		return
	}
	log.WithField("report", r).Debug("client: progress reported")
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.task.Index != t.Index || p.task.Epoch != t.Epoch || p.task.Pass != t.Pass {
		return // the loop has moved on
	}
	switch r {
	case wire.Superseded, wire.AlreadyDone, wire.StalePass:
		p.dropped.Store(true)
		log.WithField("report", r).Info("client: the task is no longer this trainer's; dropping the rest of it")
	case wire.Recorded, wire.TooSoon:
		if reply.To > 0 && int64(reply.To) != p.to.Load() {
			p.to.Store(int64(reply.To))
			log.WithField("to", reply.To).Info("client: the master cut the task short for an idle trainer; stopping there")
		}
	}
}
