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
	"time"
)

// mkfifo makes a named pipe at dir/name. Opening it for reading blocks until
// a writer opens it, unless O_NONBLOCK is given.
func mkfifo(t *testing.T, dir, name string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// unblockFIFO releases a reader blocked opening the FIFO at path: opening it
// for reading and writing never blocks, and counts as a writer.
func unblockFIFO(path string) {
	if f, err := os.OpenFile(path, os.O_RDWR|syscall.O_NONBLOCK, 0); err == nil {
		f.Close()
	}
}

// promptly returns call's error, or fails the test if call has not returned
// within a generous deadline: it is then blocked, and unblock releases it so
// that the test ends instead of hanging.
func promptly(t *testing.T, unblock func(), call func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- call() }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		unblock()
		<-done
		t.Fatal("still blocked after 10s")
		return nil
	}
}

// TestOpenNeverBlocks names a FIFO, a directory and a device to every
// function that opens a file: each must return at once with an error naming
// the path and saying what it is, without waiting for a writer.
func TestOpenNeverBlocks(t *testing.T) {
	dir := t.TempDir()
	fifo := mkfifo(t, dir, "pipe.recordio")
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
			err := promptly(t, func() { unblockFIFO(fifo) }, func() error { return tc.call(tc.path) })
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
