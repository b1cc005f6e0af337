package recordio

import (
	"io/fs"
	"os"
	"syscall"

	"github.com/pkg/errors"
)

// openFlags open a dataset file for reading without ever waiting: a FIFO
// with no writer, a terminal or a tape would otherwise block open(2)
// forever. O_NOCTTY keeps a terminal from becoming the process's
// controlling terminal. The flags say nothing about reads: OpenFile clears
// O_NONBLOCK once it has seen the file is regular.
const openFlags = os.O_RDONLY | syscall.O_NONBLOCK | syscall.O_NOCTTY

// OpenFile opens path for reading as every open of a dataset file must: the
// open never blocks, whatever path names, and only a regular file is
// returned, with its size. The check is made with fstat on the open
// descriptor, so the file cannot be swapped between the check and the use;
// anything else (directory, FIFO, socket, device) is closed again and
// refused with an error naming path and wrapping ErrNotRegular. Reads of
// the returned file are ordinary blocking reads.
func OpenFile(path string) (*os.File, int64, error) {
	return openRegular(path,
		func() (fs.FileInfo, error) { return os.Stat(path) },
		func() (*os.File, error) {
			f, err := os.OpenFile(path, openFlags, 0)
			return f, errors.WithMessage(err, "recordio")
		})
}

// OpenFileIn is OpenFile for name inside root (see os.Root: neither name nor
// a symbolic link met on the way may lead out of root). path is the name of
// the file in errors, as the caller knows it.
func OpenFileIn(root *os.Root, name, path string) (*os.File, int64, error) {
	return openRegular(path,
		func() (fs.FileInfo, error) { return root.Stat(name) },
		func() (*os.File, error) {
			f, err := root.OpenFile(name, openFlags, 0)
			if err != nil {
				var pe *fs.PathError
				if errors.As(err, &pe) {
					err = pe.Err // it names name, not path
				}
				return nil, errors.WithMessagef(err, "recordio: open %s", path)
			}
			return f, nil
		})
}

// openRegular opens path with open and returns it if it is a regular file,
// as OpenFile says. A stat first spares what is plainly not a regular file
// an open, which may act on a device (a tape rewinds when closed, a watchdog
// starts); the check that holds is the one made on the open descriptor.
func openRegular(path string, stat func() (fs.FileInfo, error), open func() (*os.File, error)) (*os.File, int64, error) {
	if st, err := stat(); err == nil && !st.Mode().IsRegular() {
		return nil, 0, notRegular(path, st.Mode())
	} // else open says what is wrong, if anything
	f, err := open()
	if err != nil {
		return nil, 0, err
	}
	st, err := f.Stat()
	if err == nil && !st.Mode().IsRegular() {
		err = notRegular(path, st.Mode())
	} else if err != nil {
		err = errors.WithMessage(err, "recordio")
	}
	if err == nil {
		err = setBlocking(f, path)
	}
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, st.Size(), nil
}

func notRegular(path string, m fs.FileMode) error {
	return errors.WithMessagef(ErrNotRegular, "recordio: %s is %s", path, kind(m))
}

// kind names what a file that is not regular is.
func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "a special file"
}
