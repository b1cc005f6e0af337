//go:build !unix

package masterbench

import "syscall"

// No signal starts or stops a profile where there is no SIGUSR1: the
// masters run unprofiled there.
var profileStart, profileStop syscall.Signal
