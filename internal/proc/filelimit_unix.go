//go:build unix

package proc

import "syscall"

// FileLimit is this process's soft RLIMIT_NOFILE, the most files it may
// hold open (Go raises it to the hard limit at start-up), or 0 if unknown.
func FileLimit() uint64 {
	var l syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l) != nil {
		return 0
	}
	return l.Cur
}
