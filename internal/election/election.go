// Package election elects one master among several through etcd and gives
// the winner what it needs to fence its writes.
//
// Each candidate puts a key under a common prefix, attached to its session's
// lease; the key with the lowest create revision leads. The winner keeps its
// own copy of its key and create revision (Leadership), and every write it
// makes must be a transaction conditioned on Fence: once its key is gone
// (lease expired, revoked, deleted) the condition fails and the write is
// rejected, whatever the writer believes.
//
// What it promises, and what it does not:
//   - Campaign returns only after the candidate's key was seen to lead and a
//     fenced no-op transaction succeeded, so a candidate whose session
//     expired while it waited never believes it won (etcd issue 19597).
//   - Campaign notices its own key disappearing while it waits and returns
//     ErrSessionExpired rather than waiting for a predecessor for ever.
//   - Losing the lease is only noticed by the next fenced write or by the
//     session's Done channel; Done can fire after a successor has already
//     won, so it is a hint, never a guarantee. Fence every write.
package election

import (
	"context"
	"fmt"

	"github.com/pkg/errors"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// Errors of the package.
var (
	ErrSessionExpired = errors.New("election: session expired")
)

// Leadership is a won election: the winner's key and its create revision.
type Leadership struct {
	Key     string
	Rev     int64
	Session *concurrency.Session
}

// Fence is the comparison that holds exactly while the leadership lasts.
func (l *Leadership) Fence() clientv3.Cmp {
	return clientv3.Compare(clientv3.CreateRevision(l.Key), "=", l.Rev)
}

// Context returns a context that ends with parent, or when the session
// ends, with ErrSessionExpired as its cause: what a term's work runs
// under. Like the session's Done channel it is a hint, never a guarantee:
// fence every write. Call stop once the term's work is over.
func (l *Leadership) Context(parent context.Context) (ctx context.Context, stop context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	go func() {
		select {
		case <-l.Session.Done():
			cancel(ErrSessionExpired)
		case <-ctx.Done():
		}
	}()
	return ctx, func() { cancel(context.Canceled) }
}

// Resign gives the leadership up at once by revoking the session's lease:
// the key and everything attached to the lease go, and a standby waiting on
// the key takes over in milliseconds.
func (l *Leadership) Resign(ctx context.Context) error {
	_, err := l.Session.Client().Revoke(ctx, l.Session.Lease())
	return err
}

// Campaign puts the session's key under prefix and waits until it leads.
func Campaign(ctx context.Context, s *concurrency.Session, prefix, value string) (*Leadership, error) {
	cli := s.Client()
	key := fmt.Sprintf("%s%x", prefix, s.Lease())
	resp, err := cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, value, clientv3.WithLease(s.Lease()))).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		return nil, errors.Wrapf(err, "election: put candidate key %s", key)
	}
	l := &Leadership{Key: key, Rev: resp.Header.Revision, Session: s}
	if !resp.Succeeded {
		l.Rev = resp.Responses[0].GetResponseRange().Kvs[0].CreateRevision
	}
	for {
		ahead, rev, err := predecessor(ctx, cli, prefix, l.Rev)
		if err != nil {
			return nil, err
		}
		if ahead == "" {
			return l, l.confirm(ctx)
		}
		if err := l.waitDelete(ctx, ahead, rev+1); err != nil {
			return nil, err
		}
	}
}

// predecessor returns the key created last before rev under prefix ("" if
// none) and the revision of the read.
func predecessor(ctx context.Context, cli *clientv3.Client, prefix string, rev int64) (string, int64, error) {
	opts := append(clientv3.WithLastCreate(), clientv3.WithMaxCreateRev(rev-1))
	resp, err := cli.Get(ctx, prefix, opts...)
	if err != nil {
		return "", 0, errors.Wrapf(err, "election: read candidates under %s", prefix)
	}
	if len(resp.Kvs) == 0 {
		return "", resp.Header.Revision, nil
	}
	return string(resp.Kvs[0].Key), resp.Header.Revision, nil
}

// waitDelete waits for the key ahead to go, watching our own key too.
func (l *Leadership) waitDelete(ctx context.Context, ahead string, from int64) error {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	cli := l.Session.Client()
	theirs := cli.Watch(wctx, ahead, clientv3.WithRev(from))
	ours := cli.Watch(wctx, l.Key, clientv3.WithRev(from))
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-l.Session.Done():
			return ErrSessionExpired
		case wr, ok := <-ours:
			if !ok || wr.Err() != nil {
				return nil // re-read from the top
			}
			for _, ev := range wr.Events {
				if ev.Type == clientv3.EventTypeDelete {
					return ErrSessionExpired
				}
			}
		case wr, ok := <-theirs:
			if !ok || wr.Err() != nil {
				return nil
			}
			for _, ev := range wr.Events {
				if ev.Type == clientv3.EventTypeDelete {
					return nil
				}
			}
		}
	}
}

// confirm makes one fenced no-op transaction: proof that the key still
// leads now, not only when it was read.
func (l *Leadership) confirm(ctx context.Context) error {
	select {
	case <-l.Session.Done():
		return ErrSessionExpired
	default:
	}
	resp, err := l.Session.Client().Txn(ctx).If(l.Fence()).Commit()
	if err != nil {
		return errors.Wrapf(err, "election: confirm leadership of %s", l.Key)
	}
	if !resp.Succeeded {
		return ErrSessionExpired
	}
	return nil
}
