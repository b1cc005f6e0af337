package client

import (
	"context"
	"math/rand/v2"
	"time"
)

// backoff computes the waits between retries: doubling from min to max,
// each jittered to between half and all of its length.
type backoff struct {
	next, max time.Duration
}

func (c *Client) newBackoff() *backoff {
	return &backoff{next: c.cfg.MinBackoff, max: c.cfg.MaxBackoff}
}

// delay returns the next wait and doubles the one after.
func (b *backoff) delay() time.Duration {
	d := b.next
	b.next = min(2*b.next, b.max)
	half := d / 2
	return half + rand.N(d-half+1)
}

// wait sleeps for the next delay; it returns early with the context's cause
// when ctx ends.
func (b *backoff) wait(ctx context.Context) error {
	t := time.NewTimer(b.delay())
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
