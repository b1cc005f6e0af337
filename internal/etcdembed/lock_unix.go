//go:build unix

package etcdembed

import (
	"os"
	"syscall"

	"github.com/pkg/errors"
)

// lockDir takes an exclusive flock on the directory itself (no file is added
// to etcd's data directory). The lock belongs to the open file, so a second
// member in the same process conflicts too, and the kernel drops it when
// the process dies, kill -9 included.
func lockDir(dir string) (unlock func(), err error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, errors.Errorf("data dir %s is in use by another etcd member", dir)
		}
		return nil, errors.WithMessagef(err, "lock data dir %s", dir)
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
