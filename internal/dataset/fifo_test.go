//go:build linux || darwin

package dataset

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trainmaster/master/go/recordio"
)

// TestBuildRefusesFIFO reports datasets holding a named pipe, named directly
// or matched by a glob among RecordIO files, with and without a root.
// Opening a FIFO for reading waits for a writer: the report must instead be
// refused at once, naming the FIFO.
func TestBuildRefusesFIFO(t *testing.T) {
	dir := t.TempDir()
	writeVariedFiles(t, dir, 5)
	fifo := filepath.Join(dir, "f0002x.rio") // sorts among the files
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		cfg      Config
		patterns []string
	}{
		{"named", Config{}, []string{fifo}},
		{"matched by a glob", Config{}, []string{filepath.Join(dir, "f*.rio")}},
		{"named, with a root", Config{Root: dir}, []string{fifo}},
		{"matched by a glob, with a root", Config{Root: dir}, []string{filepath.Join(dir, "f*.rio")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() {
				_, err := BuildWith(tc.cfg, tc.patterns, 2)
				done <- err
			}()
			var err error
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				// Opening the FIFO for reading and writing counts as a
				// writer and releases the blocked open, so the test ends.
				if f, err := os.OpenFile(fifo, os.O_RDWR|syscall.O_NONBLOCK, 0); err == nil {
					f.Close()
				}
				<-done
				t.Fatal("Build still blocked after 10s")
			}
			if !errors.Is(err, recordio.ErrNotRegular) || !strings.Contains(err.Error(), fifo+" is a named pipe (FIFO)") {
				t.Fatalf("error %v, want one saying %s is a named pipe", err, fifo)
			}
		})
	}
}
