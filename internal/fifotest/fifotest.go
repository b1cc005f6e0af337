//go:build linux || darwin

// Package fifotest makes named pipes for the tests of code that must not
// block opening a file, and runs that code under a deadline that cannot
// hang the test: opening a FIFO for reading waits for a writer.
package fifotest

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// Make makes a named pipe at dir/name and returns its path.
func Make(t testing.TB, dir, name string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Promptly returns call's error, or fails the test if call has not returned
// within 10 seconds: it is then taken to be blocked opening the FIFO at
// path, which is released (opening it for reading and writing never blocks
// and counts as a writer) so that the test ends instead of hanging.
func Promptly(t testing.TB, path string, call func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- call() }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		if f, err := os.OpenFile(path, os.O_RDWR|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
		<-done
		t.Fatalf("still blocked after 10s with the FIFO %s", path)
		return nil
	}
}
