//go:build !unix

package etcdembed

// lockDir does nothing where flock is missing: a second member on the same
// data directory then waits on etcd's own database lock until ReadyTimeout.
func lockDir(string) (unlock func(), err error) { return func() {}, nil }
