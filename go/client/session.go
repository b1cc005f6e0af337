package client

import (
	"context"
	"time"

	"github.com/trainmaster/master/go/wire"
)

// errEnd is the final entry of a session whose master said all passes done.
var errEnd = wire.ErrAllDone

// loaded is a task read into memory, or with err set the final entry of out.
type loaded struct {
	task wire.Task
	buf  *taskBuf // its records, released once they are consumed; nil for a range task
	err  error
	// dropped: the loop stopped it early because the master said it is no
	// longer this trainer's (progress.go); it is not reported finished.
	dropped bool
	fetched time.Time // when the master handed it out
}

// session is the state of one Records loop.
type session struct {
	c      *Client
	cancel context.CancelFunc // stops the prefetch goroutine
	exited chan struct{}      // closed when it has returned
	out    chan *loaded
	done   chan *loaded // consumed tasks, back to the goroutine
	limit  int

	progress *progress // how far the loop got in its task (progress.go)

	// The goroutine's own, and stop's once it has exited.
	outstanding int
	pending     []wire.Task // consumed, not reported yet
	// onePass: a loop of one pass (Client.Pass); pass is the pass it
	// trains, learned from its first task, -1 until then and in a Records
	// loop, whose tasks may be of any pass.
	onePass bool
	pass    int
	// next: a rank whose share of a pass is out waits for the pass
	// after it (wire.TextRankDone); -1 when it does not wait.
	next int
	last int // the pass of the last task handed, -1 before the first
}

// start begins a session, with its prefetch goroutine bound to ctx and to
// the client's life; onePass: of one pass (Client.Pass).
func (c *Client) start(ctx context.Context, onePass bool) *session {
	fctx, cancel := c.bind(ctx)
	limit := c.cfg.Prefetch + 1
	s := &session{
		c:       c,
		cancel:  cancel,
		exited:  make(chan struct{}),
		out:     make(chan *loaded, limit+1),
		done:    make(chan *loaded, limit),
		limit:   limit,
		onePass: onePass,
		pass:    -1,
		next:    -1,
		last:    -1,
	}
	s.progress = newProgress(c)
	c.trained.loop(s)
	go s.run(fctx)
	go s.progress.run(fctx)
	return s
}

// take returns the next task read, or the error that ends the loop: errEnd
// when all passes are done (or, in a per-pass loop, its pass), ctx.Err() when ctx has ended, ErrClosed after
// Close.
func (s *session) take(ctx context.Context) (*loaded, error) {
	select {
	case l := <-s.out:
		if err := s.interrupted(ctx); err != nil {
			return nil, err
		}
		return l, l.err
	case <-ctx.Done():
	case <-s.c.life.Done():
	}
	return nil, s.interrupted(ctx)
}

// interrupted says why the loop must stop at once, if it must: ctx ended
// (ctx.Err() then) or the client was closed.
func (s *session) interrupted(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.c.life.Err() != nil {
		return ErrClosed
	}
	return nil
}

// consumed hands a completely consumed task to the goroutine for reporting
// and for reusing its buffers.
func (s *session) consumed(l *loaded) { s.done <- l }

// stop ends the goroutines, waits for them, and reports how far
// the loop got in a task it left in the middle and the consumed tasks not
// reported yet, with a context that outlives ctx by CallTimeout.
func (s *session) stop(ctx context.Context) {
	s.c.trained.loop(nil)
	s.cancel()
	<-s.exited
	s.absorb()
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.c.cfg.CallTimeout)
	defer cancel()
	s.progress.final(fctx)
	if len(s.pending) == 0 {
		return
	}
	if _, err := s.flush(fctx); err != nil {
		s.c.cfg.Log.WithError(err).Warnf("client: %d consumed tasks left unreported", len(s.pending))
	}
}
