package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/rpc"
	"reflect"
	"strings"
	"time"

	"github.com/pkg/errors"

	"github.com/trainmaster/master/go/wire"
)

// connError is a failure to reach the master, of the connection to it, or a
// "master is not serving" answer: the call is retried on a new connection to
// the address the Resolver gives next.
type connError struct {
	op  string
	err error
}

func (e *connError) Error() string { return e.op + ": " + e.err.Error() }
func (e *connError) Unwrap() error { return e.err }

// gaveUp is the error of a call that stopped retrying because its context
// ended: errors.Is and As see why it ended, and its text also names the
// last failure retried.
type gaveUp struct {
	cause    error // why the context ended
	attempts int
	last     error
}

func (e *gaveUp) Error() string {
	return fmt.Sprintf("%v (after %d attempts, the last: %v)", e.cause, e.attempts, e.last)
}

func (e *gaveUp) Unwrap() error { return e.cause }

// call invokes method of the master's service and stores the answer in
// reply. It is the one place every RPC goes through: it resolves and dials
// when there is no connection, and on a connection failure or "master is not
// serving" drops the connection and retries with backoff until ctx ends or
// the client is closed. Other errors, the contract's included, are returned
// wrapped with the method's name; wire.Is still recognises them.
func (c *Client) call(ctx context.Context, method string, args, reply any) error {
	ctx, cancel := c.bind(ctx)
	defer cancel()
	b := c.newBackoff()
	for attempt := 1; ; attempt++ {
		err := c.callOnce(ctx, method, args, reply)
		var ce *connError
		if !errors.As(err, &ce) {
			if err != nil {
				return errors.WithMessagef(err, "%s.%s", wire.ServiceName, method)
			}
			return nil
		}
		c.cfg.Log.WithError(err).WithField("attempt", attempt).Debugf("client: %s failed, retrying", method)
		if werr := b.wait(ctx); werr != nil {
			return errors.WithMessagef(&gaveUp{cause: werr, attempts: attempt, last: err}, "%s.%s", wire.ServiceName, method)
		}
	}
}

// callOnce makes one attempt: it connects when there is no connection,
// then invokes.
func (c *Client) callOnce(ctx context.Context, method string, args, reply any) error {
	rc, err := c.connect(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return err
	}
	return c.invoke(ctx, rc, method, args, reply)
}

// invoke makes one call on rc. When ctx ends or no reply comes in time it
// closes the connection, which makes net/rpc finish the call, and waits for
// that, so that nothing writes to reply after it returns.
func (c *Client) invoke(ctx context.Context, rc *rpc.Client, method string, args, reply any) error {
	// gob leaves the fields it does not receive (zero ones) alone.
	reflect.ValueOf(reply).Elem().SetZero()
	call := rc.Go(wire.ServiceName+"."+method, args, reply, make(chan *rpc.Call, 1))
	deadline := time.Now().Add(c.cfg.CallTimeout)
	timer := time.NewTimer(min(movedCheck, c.cfg.CallTimeout))
	defer timer.Stop()
	for {
		select {
		case <-call.Done:
			return c.classify(rc, call.Error)
		case <-ctx.Done():
			c.drop(rc)
			<-call.Done
			return context.Cause(ctx)
		case <-timer.C:
			if err := c.overdue(ctx, rc, deadline); err != nil {
				c.drop(rc)
				<-call.Done
				return &connError{op: "call", err: err}
			}
			timer.Reset(min(movedCheck, time.Until(deadline)))
		}
	}
}

// overdue says why a call on rc still without a reply is to be given up:
// CallTimeout has passed, or the master moved (moved); nil to wait on.
func (c *Client) overdue(ctx context.Context, rc *rpc.Client, deadline time.Time) error {
	if time.Until(deadline) <= 0 {
		return errors.Errorf("no reply in %v", c.cfg.CallTimeout)
	}
	if moved := c.moved(ctx, rc); moved != "" {
		return errors.Errorf("no reply yet, and the master is now at %s", moved)
	}
	return nil
}

// movedCheck is how long a call waits for its reply before the client asks
// the Resolver whether the master moved, and how often it asks again: a
// master frozen (SIGSTOP, a hung host) keeps its connections open and
// answers nothing, and a standby serves in its place after its lease (a
// few seconds), long before CallTimeout. Calls take milliseconds, so
// almost none waits this long.
const movedCheck = 2 * time.Second

// moved returns the master's address if the Resolver now gives another
// one than the address rc was dialled at, "" otherwise (or when it cannot
// tell within a second).
func (c *Client) moved(ctx context.Context, rc *rpc.Client) string {
	c.mu.Lock()
	addr, current := c.addr, c.conn == rc
	c.mu.Unlock()
	if !current {
		return ""
	}
	rctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	now, err := c.res.Resolve(rctx)
	if err != nil || now == addr {
		return ""
	}
	return now
}

// classify sorts the outcome of a call. The master's answers come as
// rpc.ServerError: "master is not serving" is retried elsewhere, the others
// are returned ("not authenticated" after dropping the connection, which
// the master closes). Any other error means the connection is unusable
// (net/rpc shuts a connection down after any failure); it is retried unless
// it is a gob protocol error or a TLS certificate refused, which would only
// happen again.
func (c *Client) classify(rc *rpc.Client, err error) error {
	var answer rpc.ServerError
	isAnswer := errors.As(err, &answer)
	switch {
	case err == nil:
		return nil
	case isAnswer && wire.Is(err, wire.TextUnauthorized):
		c.drop(rc)
		return err
	case isAnswer && !wire.Is(err, wire.TextNotServing):
		return err
	}
	err = c.shutdownCause(rc, err)
	c.drop(rc)
	if strings.Contains(err.Error(), "gob: ") || refusedTLS(err) {
		return err
	}
	return &connError{op: "connection", err: err}
}

// refusedTLS says whether err is a TLS certificate refused, by this side
// (not signed by a CA of Config.TLS, or for another name) or by the master
// (an alert: no client certificate, or one it does not trust): a
// configuration to fix, not a failure that passes.
func refusedTLS(err error) bool {
	var verify *tls.CertificateVerificationError
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	switch {
	case errors.As(err, &verify), errors.As(err, &unknown), errors.As(err, &host), errors.As(err, &invalid):
		return true
	}
	return strings.Contains(err.Error(), "remote error: tls: ")
}
