// Package watch is `master watch`'s loop and views: it polls a master's
// /status.json (statusapi) and shows the job on a terminal, redrawn in
// place, or as plain summary lines.
//
// Where it looks: without Config.Addr it asks Config.Masters for the job's
// masters and polls the leader's page; when that master stops answering
// or stops leading it asks again, so it follows a failover. With Addr it
// polls that one page, and retries it when it does not answer.
//
// Plain lines are printed only when they differ from the last one, so an
// idle job prints nothing:
//
//	pass 2/3 42% | 1234 rec/s | eta pass 12s job 40s | todo 3 pending 4 done 10 failed 0 | slowest: trainer-2 (310 rec/s), ... | leader 10.0.0.5:8081
//
// Run returns nil once all passes are done, after a final line "all N
// passes done ...", and when its context ends; it returns the permanent
// errors of statusapi (a lock it cannot open, a leader without a page) at
// once.
package watch

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/trainmaster/master/go/discovery"
	"github.com/trainmaster/master/internal/statusapi"
)

// Config configures a watch.
type Config struct {
	Pages *statusapi.Client
	// Addr is the one page polled (host:port); empty: the leader's, found
	// through Masters.
	Addr string
	// Masters reads the job's masters, the leader first
	// (discovery.Masters); needed without Addr.
	Masters func(ctx context.Context) ([]discovery.Master, error)
	// Namespace is the job's, named when no master leads it.
	Namespace string
	Interval  time.Duration // between polls
	Out       io.Writer
	// Terminal, if set, returns the size of the terminal Out is: the view
	// is redrawn in place on it. Nil: plain lines.
	Terminal func() (cols, rows int)
}

// mastersTimeout bounds one read of the masters.
const mastersTimeout = 5 * time.Second

// Run polls until all passes are done, ctx ends or a permanent error.
func Run(ctx context.Context, cfg Config) error {
	s := newScreen(cfg.Out, cfg.Terminal, cfg.Interval, cfg.Addr)
	tick := time.NewTicker(cfg.Interval)
	defer tick.Stop()
	addr := cfg.Addr
	for {
		if addr == "" {
			a, notice, err := leaderPage(ctx, cfg)
			if ctx.Err() != nil {
				return nil
			}
			if err != nil {
				return err
			}
			addr = a
			s.notice(notice)
		}
		if addr != "" {
			st, err := cfg.Pages.Status(ctx, addr)
			switch {
			case ctx.Err() != nil:
			case statusapi.Permanent(err):
				return err
			case err != nil:
				s.notice(unanswered(cfg, addr, err))
				addr = cfg.Addr
			case !st.Leading && cfg.Addr == "":
				s.notice(fmt.Sprintf("the master at %s stands by now; looking for the leader in etcd", addr))
				addr = ""
			default:
				s.show(st, addr, time.Now())
				if st.Job != nil && st.Job.AllDone {
					s.done(st)
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return nil // the cursor is below the view already
		case <-tick.C:
		}
	}
}

// unanswered says that the page at addr did not answer, and what the
// watch does about it.
func unanswered(cfg Config, addr string, err error) string {
	next := "trying again"
	if cfg.Addr == "" {
		next = "looking for the leader in etcd"
	}
	return fmt.Sprintf("the master at %s does not answer (%v); %s", addr, err, next)
}

// leaderPage reads the masters and returns the leader's page, or a notice
// saying why there is none yet. A leader that serves no page is a
// permanent error.
func leaderPage(ctx context.Context, cfg Config) (addr, notice string, err error) {
	rctx, cancel := context.WithTimeout(ctx, mastersTimeout)
	defer cancel()
	masters, err := cfg.Masters(rctx)
	if err != nil {
		return "", fmt.Sprintf("%v; trying again", err), nil
	}
	if addr, err = statusapi.LeaderPage(masters); err == nil && addr == "" {
		notice = fmt.Sprintf("no master leads the job in namespace %q yet; waiting", cfg.Namespace)
	}
	return addr, notice, err
}
