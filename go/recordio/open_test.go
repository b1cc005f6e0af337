//go:build linux || darwin

package recordio

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/trainmaster/master/internal/fifotest"
)

// TestOpenNeverBlocks names a FIFO, a directory and a device to every
// function that opens a file: each must return at once with an error naming
// the path and saying what it is, without waiting for a writer.
func TestOpenNeverBlocks(t *testing.T) {
	dir := t.TempDir()
	fifo := fifotest.Make(t, dir, "pipe.recordio")
	open := func(path string) error {
		f, _, err := OpenFile(path)
		if err == nil {
			f.Close()
		}
		return err
	}
	// A FIFO put in place after the stat that OpenFile makes first: the
	// open itself must not block.
	openAfterStat := func(path string) error {
		f, _, err := openRegular(path, func() (fs.FileInfo, error) { return nil, fs.ErrNotExist },
			func() (*os.File, error) { return os.OpenFile(path, openFlags, 0) })
		if err == nil {
			f.Close()
		}
		return err
	}
	index := func(path string) error { _, err := IndexFile(path); return err }
	scanFiles := func(path string) error { _, err := ScanFiles(path); return err }
	scanner := func(path string) error {
		s := NewScanner([]ChunkRef{{Path: path}})
		defer s.Close()
		if s.Scan() {
			return nil
		}
		return s.Err()
	}
	for _, tc := range []struct {
		name string
		call func(string) error
		path string
		kind string
	}{
		{"OpenFile FIFO", open, fifo, "a named pipe (FIFO)"},
		{"FIFO after the stat", openAfterStat, fifo, "a named pipe (FIFO)"},
		{"directory after the stat", openAfterStat, dir, "a directory"},
		{"IndexFile FIFO", index, fifo, "a named pipe (FIFO)"},
		{"ScanFiles FIFO", scanFiles, fifo, "a named pipe (FIFO)"},
		{"Scanner FIFO", scanner, fifo, "a named pipe (FIFO)"},
		{"IndexFile directory", index, dir, "a directory"},
		{"Scanner directory", scanner, dir, "a directory"},
		{"IndexFile device", index, os.DevNull, "a character device"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := fifotest.Promptly(t, fifo, func() error { return tc.call(tc.path) })
			if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), tc.path+" is "+tc.kind) {
				t.Fatalf("error %v, want one saying %s is %s, not a regular file", err, tc.path, tc.kind)
			}
		})
	}
}

// TestOpenFileBlockingReads checks that the descriptor OpenFile returns for
// a regular file is back in blocking mode, and that OpenFileIn opens only
// within its root.
func TestOpenFileBlockingReads(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "data.recordio")
	if err := WriteFile(path, 3, func(i int) []byte { return []byte{byte(i)} }); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	outside := filepath.Join(t.TempDir(), "outside.recordio")
	if err := os.WriteFile(outside, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	up, err := filepath.Rel(dir, outside)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(up, filepath.Join(dir, "up")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		open func() (*os.File, int64, error)
		err  string
	}{
		{"OpenFile", func() (*os.File, int64, error) { return OpenFile(path) }, ""},
		{"OpenFileIn", func() (*os.File, int64, error) { return OpenFileIn(root, "data.recordio", "shown") }, ""},
		{"OpenFileIn missing", func() (*os.File, int64, error) { return OpenFileIn(root, "none", "shown") }, "recordio: open shown: no such file"},
		{"OpenFileIn escaping", func() (*os.File, int64, error) { return OpenFileIn(root, "up", "shown") }, "recordio: open shown: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, size, err := tc.open()
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			st, err := os.Stat(path)
			if err != nil || size != st.Size() {
				t.Fatalf("size %d, want %d (%v)", size, st.Size(), err)
			}
			rc, err := f.SyscallConn()
			if err != nil {
				t.Fatal(err)
			}
			var flags uintptr
			var errno syscall.Errno
			if err := rc.Control(func(fd uintptr) {
				flags, _, errno = syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
			}); err != nil || errno != 0 {
				t.Fatal(err, errno)
			}
			if flags&syscall.O_NONBLOCK != 0 {
				t.Fatal("the file is still in non-blocking mode")
			}
		})
	}
}
