// Package discovery tells trainers where the master is: the leading master
// publishes its address under <namespace>/master/addr, attached to its
// session lease, so the key disappears when that master dies and is
// replaced when another one takes over. Example shows a trainer resolving
// it; ExampleMasters lists the masters campaigning for the lock.
package discovery

import (
	"context"

	"github.com/pkg/errors"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// AddrKey is the key the leading master publishes its address under.
func AddrKey(namespace string) string { return namespace + "/master/addr" }

// LockPrefix is the prefix of the master lock's candidate keys.
func LockPrefix(namespace string) string { return namespace + "/master/lock/" }

// Resolver finds the master's address in etcd; it implements
// client.Resolver.
type Resolver struct {
	cli *clientv3.Client
	key string
}

// NewResolver returns a Resolver for the job under namespace.
func NewResolver(cli *clientv3.Client, namespace string) *Resolver {
	return &Resolver{cli: cli, key: AddrKey(namespace)}
}

// Resolve returns the published address, waiting for one to be published
// when there is none (no master is leading yet, or the last one died).
func (r *Resolver) Resolve(ctx context.Context) (string, error) {
	resp, err := r.cli.Get(ctx, r.key)
	if err != nil {
		return "", errors.WithMessagef(err, "discovery: read %s", r.key)
	}
	if len(resp.Kvs) > 0 {
		return string(resp.Kvs[0].Value), nil
	}
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	for wr := range r.cli.Watch(wctx, r.key, clientv3.WithRev(resp.Header.Revision+1)) {
		if err := wr.Err(); err != nil {
			return "", errors.WithMessagef(err, "discovery: watch %s", r.key)
		}
		for _, ev := range wr.Events {
			if ev.Type == clientv3.EventTypePut {
				return string(ev.Kv.Value), nil
			}
		}
	}
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	return "", errors.Errorf("discovery: watch of %s ended", r.key)
}
