package client

import (
	"context"
	"time"

	"github.com/pkg/errors"

	"github.com/trainmaster/master/go/wire"
)

// How a Records loop fetches ahead and reports finishes.
//
// A session has two sides. The prefetch goroutine (run) is the only one that
// asks for tasks: it fetches a task, reads all its blocks into memory and
// queues it on out. The loop takes tasks from out, yields their records, and
// sends each task it consumed completely back on done.
//
// The goroutine keeps at most limit = Prefetch+1 tasks outstanding (queued or
// being consumed), and a finish can only enter its books through done, after
// the loop consumed the task. When a task comes back on done a slot frees,
// and the fetch that fills it carries that finish: GetTask(finished). So a
// finish is never sent before its task is consumed, however far ahead the
// goroutine reads, and in steady state it costs no extra round trip.
//
// When the master has no task for us (or no dataset), the finishes waiting
// are sent at once with TaskFinished instead, and so is every task consumed
// while the goroutine waits to ask again: a trainer waiting for work never
// sits on a finished task (which could be the one the pass waits for). A
// finish the master records this way may be the one the pass waited for (the
// next pass starts, or all are done), so the goroutine then asks again at
// once instead of sleeping out its backoff. When the loop ends, whatever was
// consumed and not reported yet is reported with TaskFinished by stop.
//
// Memory: the goroutine reads a task only while fewer than limit are
// outstanding, so at most limit tasks are in memory, the one being consumed
// included. A task's records stay in the buffers its blocks were read into
// (a taskBuf); book releases them for the next task read, which is safe
// because a task comes back on done only once the loop body has returned
// from its last record. Channels: out holds at most limit tasks plus one final entry,
// and done at most limit tasks, so neither side ever blocks on a send.

// run is the prefetch goroutine. Whatever ends it, it queues a final entry
// saying why.
func (s *session) run(ctx context.Context) {
	defer close(s.exited)
	for {
		l, err := s.step(ctx)
		if err != nil {
			s.out <- &loaded{err: err}
			return
		}
		if l != nil {
			s.out <- l
			s.outstanding++
		}
	}
}

// step waits for a free slot or fetches and reads one task. It returns nil
// and no error when there is nothing to queue yet (a slot freed, or a task
// failed and was reported).
func (s *session) step(ctx context.Context) (*loaded, error) {
	s.absorb()
	if s.outstanding >= s.limit {
		return nil, s.awaitConsumed(ctx)
	}
	t, err := s.nextTask(ctx)
	if err != nil {
		return nil, err
	}
	fetched := time.Now()
	buf, err := s.read(ctx, t)
	if err != nil {
		return nil, s.fail(ctx, t, err)
	}
	return &loaded{task: t, buf: buf, fetched: fetched}, nil
}

// nextTask asks for a task, carrying the oldest unreported finish, and waits
// with backoff while the master has none to give. In a per-pass loop every
// ask after the first task names that task's pass (wire.Task.OnePass), and
// "pass over" ends the loop as "all passes done" does.
func (s *session) nextTask(ctx context.Context) (wire.Task, error) {
	b := s.c.newBackoff()
	for {
		var finished wire.Task
		if len(s.pending) > 0 {
			finished = s.pending[0]
		}
		switch {
		case s.pass >= 0:
			finished.OnePass, finished.Pass = true, s.pass
		case s.next >= 0:
			finished.OnePass, finished.Pass = true, s.next
		}
		t, err := s.c.GetTask(ctx, finished)
		switch {
		case err == nil && t.Epoch == 0:
			return t, errors.Errorf("%s.GetTask: master answered an empty task (epoch 0)", wire.ServiceName)
		case err == nil:
			if len(s.pending) > 0 {
				s.c.trained.acked(s.pending[0])
				s.pending = s.pending[1:]
			}
			if s.onePass {
				s.pass = t.Pass // the pass of the loop's first task is the loop's
			}
			s.next, s.last = -1, t.Pass
			return t, nil
		case ctx.Err() != nil:
			return t, context.Cause(ctx)
		case wire.Is(err, wire.TextAllDone), s.onePass && wire.Is(err, wire.TextPassOver):
			return t, errEnd
		case wire.Is(err, wire.TextRankDone) && s.onePass:
			return t, errEnd // the rank's share of the loop's pass is out
		case wire.Is(err, wire.TextRankDone):
			s.next = -1 // wait for the pass after the last task's: the others finish theirs
			if s.last >= 0 {
				s.next = s.last + 1
			}
		case wire.Is(err, wire.TextPassOver):
			s.next = -1 // the pass waited for is over too: take whatever is current
		case !wire.Is(err, wire.TextNoTask) && !wire.Is(err, wire.TextNoDataset):
			return t, err
		}
		// Nothing to take now: no task, no dataset yet, or a rank waiting
		// for the next pass.
		if err := s.idle(ctx, b, err); err != nil {
			return t, err
		}
	}
}

// idle is a wait between two GetTask calls that found nothing: it reports
// every consumed task at once, reports and declares the datasets again if
// the master lost them (reportAgain), and sleeps for the next backoff
// delay. It returns early, so that the caller asks again, as soon as the
// master records one of those finishes: the pass may have been waiting for
// it.
func (s *session) idle(ctx context.Context, b *backoff, why error) error {
	s.c.cfg.Log.WithError(why).Debug("client: no task, waiting")
	if recorded, err := s.flush(ctx); err != nil || recorded {
		return err
	}
	if wire.Is(why, wire.TextNoDataset) {
		if err := s.c.reportAgain(ctx); err != nil {
			return err
		}
	}
	timer := time.NewTimer(b.delay())
	defer timer.Stop()
	for {
		select {
		case <-timer.C:
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		case l := <-s.done:
			s.book(l)
			if recorded, err := s.flush(ctx); err != nil || recorded {
				return err
			}
		}
	}
}

// read reads a task's records, or says why it cannot be processed. A task
// of an index-range dataset has no file to read: its buffer is nil.
func (s *session) read(ctx context.Context, t wire.Task) (*taskBuf, error) {
	if s.c.cfg.Inject != nil {
		if err := s.c.cfg.Inject(t); err != nil {
			return nil, errors.WithMessagef(err, "task %d", t.Index)
		}
	}
	if isRange(t) {
		return nil, nil
	}
	return readTask(ctx, t)
}

// fail reports t failed because of cause, unless ctx has ended; a rejected
// report is logged and the session goes on.
func (s *session) fail(ctx context.Context, t wire.Task, cause error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	log := s.c.cfg.Log.WithField("task", t.Index).WithField("pass", t.Pass)
	log.WithError(cause).Warn("client: task failed")
	_, err := s.c.TaskFailed(ctx, t, cause)
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return context.Cause(ctx)
	case wire.Is(err, wire.TextAllDone):
		return errEnd
	}
	log.WithError(err).Warn("client: failure report rejected")
	return nil
}

// flush reports every pending finish with TaskFinished, and says whether the
// master recorded any (rather than finding it already done, or rejecting
// it). It stops only when ctx ends or the client is closed; a report the
// master rejects is logged and dropped.
func (s *session) flush(ctx context.Context) (recorded bool, err error) {
	for len(s.pending) > 0 {
		t := s.pending[0]
		r, err := s.c.TaskFinished(ctx, t)
		if err != nil && (ctx.Err() != nil || errors.Is(err, ErrClosed)) {
			return recorded, err
		}
		s.pending = s.pending[1:]
		s.c.trained.acked(t)
		log := s.c.cfg.Log.WithField("task", t.Index).WithField("pass", t.Pass)
		if err != nil {
			log.WithError(err).Warn("client: finish report rejected")
		} else {
			recorded = recorded || r == wire.Recorded
			log.WithField("report", r).Debug("client: task finished")
		}
	}
	return recorded, nil
}

// awaitConsumed waits for the loop to hand back a consumed task.
func (s *session) awaitConsumed(ctx context.Context) error {
	select {
	case l := <-s.done:
		s.book(l)
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// absorb books every consumed task handed back so far, without waiting.
func (s *session) absorb() {
	for {
		select {
		case l := <-s.done:
			s.book(l)
		default:
			return
		}
	}
}

// book books one consumed task: its slot is free, its finish pending
// (unless it was dropped), its buffers free for the next task read.
func (s *session) book(l *loaded) {
	s.outstanding--
	if !l.dropped {
		s.pending = append(s.pending, s.c.report(l.task))
	}
	if l.buf != nil { // a range task's is nil
		l.buf.release()
	}
}
