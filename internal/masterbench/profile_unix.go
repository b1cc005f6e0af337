//go:build unix

package masterbench

import "syscall"

// The signals that start and stop a master's CPU profile.
var profileStart, profileStop = syscall.SIGUSR1, syscall.SIGUSR2
