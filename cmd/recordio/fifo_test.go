//go:build linux || darwin

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestFIFOArgument names a FIFO to cat, stat and verify: each must fail at
// once, naming it, rather than wait for a writer.
func TestFIFOArgument(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "pipe.rio")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"cat", "stat", "verify"} {
		t.Run(cmd, func(t *testing.T) {
			type result struct {
				code   int
				stderr string
			}
			done := make(chan result, 1)
			go func() {
				code, _, stderr := runCmd(t, "", cmd, fifo)
				done <- result{code, stderr}
			}()
			var r result
			select {
			case r = <-done:
			case <-time.After(10 * time.Second):
				// A reader and writer open never blocks and releases the
				// blocked open, so the test ends.
				if f, err := os.OpenFile(fifo, os.O_RDWR|syscall.O_NONBLOCK, 0); err == nil {
					f.Close()
				}
				<-done
				t.Fatalf("recordio %s still blocked after 10s", cmd)
			}
			if r.code != 1 || !strings.Contains(r.stderr, fifo+" is a named pipe (FIFO)") {
				t.Fatalf("exit %d, stderr %q; want 1 and the FIFO named", r.code, r.stderr)
			}
		})
	}
}
