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
// most every Config.ProgressInterval, so that the loop never waits for the
// master's commit; stop sends the last position of a task left in the
// middle. A report the master refuses is logged and dropped: progress only
// saves work after a fault, it is never needed. A report answered
// superseded, already done or stale pass says the task is no longer this
// trainer's (it timed out and went to another, or another finished it):
// the loop then drops it at its next record and does not report it
// finished.
type progress struct {
	c      *Client
	exited chan struct{} // closed when run has returned

	done    atomic.Int64 // the position reached in the task being consumed: the loop stores it after every record
	dropped atomic.Bool  // the master said the task is no longer this trainer's

	mu   sync.Mutex
	task wire.Task // the task being consumed; Epoch 0: none
	sent int64     // the position last reported for it
}

func newProgress(c *Client) *progress { return &progress{c: c, exited: make(chan struct{})} }

// on reports whether the client reports progress.
func (p *progress) on() bool { return p.c.cfg.ProgressInterval > 0 }

// begin says the loop starts consuming t at position t.From.
func (p *progress) begin(t wire.Task) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.task, p.sent = t, int64(t.From)
	p.done.Store(int64(t.From))
	p.dropped.Store(false)
}

// reached says the records before position done are trained.
func (p *progress) reached(done int) { p.done.Store(int64(done)) }

// end says the task is consumed: nothing more to report of it.
func (p *progress) end() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.task = wire.Task{}
}

// run reports the position every ProgressInterval until ctx ends.
func (p *progress) run(ctx context.Context) {
	defer close(p.exited)
	if !p.on() {
		return
	}
	ticker := time.NewTicker(p.c.cfg.ProgressInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ticker.C:
			p.report(ctx)
		case <-ctx.Done():
			return
		}
	}
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
	r, err := p.c.TaskProgress(ctx, wire.Progress{Index: t.Index, Epoch: t.Epoch, Pass: t.Pass, Done: int(done)})
	log := p.c.cfg.Log.WithField("task", t.Index).WithField("pass", t.Pass).WithField("done", done)
	if err != nil {
		log.WithError(err).Debug("client: progress report not recorded")
		return
	}
	log.WithField("report", r).Debug("client: progress reported")
	switch r {
	case wire.Superseded, wire.AlreadyDone, wire.StalePass:
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.task.Index == t.Index && p.task.Epoch == t.Epoch && p.task.Pass == t.Pass {
			p.dropped.Store(true)
			log.WithField("report", r).Info("client: the task is no longer this trainer's; dropping the rest of it")
		}
	}
}
