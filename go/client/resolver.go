package client

import "context"

// Resolver finds the address ("host:port") of the master to talk to. The
// client asks again after every connection failure and every "master is not
// serving" answer, so an implementation that follows the master (e.g. one
// that watches etcd) gives failover for free.
type Resolver interface {
	Resolve(ctx context.Context) (string, error)
}

// Static is a Resolver that always answers the same address.
type Static string

// Resolve returns the address.
func (s Static) Resolve(context.Context) (string, error) { return string(s), nil }

// ResolverFunc adapts a function to the Resolver interface.
type ResolverFunc func(ctx context.Context) (string, error)

// Resolve calls f.
func (f ResolverFunc) Resolve(ctx context.Context) (string, error) { return f(ctx) }
