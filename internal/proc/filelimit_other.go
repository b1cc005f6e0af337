//go:build !unix

package proc

// FileLimit is unknown where there is no RLIMIT_NOFILE.
func FileLimit() uint64 { return 0 }
