//go:build unix

package recordio

import (
	"os"
	"syscall"

	"github.com/pkg/errors"
)

// setBlocking clears O_NONBLOCK. Linux ignores it for regular files, but
// not every system and file system promise to, and a read that returned
// EAGAIN would be taken for an I/O error.
func setBlocking(f *os.File, path string) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return errors.WithMessage(err, "recordio")
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = syscall.SetNonblock(int(fd), false) }); err != nil {
		return errors.WithMessage(err, "recordio")
	}
	return errors.WithMessagef(serr, "recordio: %s: clear O_NONBLOCK", path)
}
