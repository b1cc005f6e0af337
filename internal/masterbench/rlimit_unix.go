//go:build unix

package masterbench

import "syscall"

// descriptorLimit is this process's RLIMIT_NOFILE (Go raises its soft
// limit to the hard one at start-up, as the master, a Go program too,
// does), or 0 if unknown.
func descriptorLimit() uint64 {
	var l syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l) != nil {
		return 0
	}
	return l.Cur
}
