//go:build linux || darwin

package main

import (
	"strings"
	"testing"

	"github.com/trainmaster/master/internal/fifotest"
)

// TestFIFOArgument names a FIFO to cat, stat and verify: each must fail at
// once, naming it, rather than wait for a writer.
func TestFIFOArgument(t *testing.T) {
	fifo := fifotest.Make(t, t.TempDir(), "pipe.rio")
	for _, cmd := range []string{"cat", "stat", "verify"} {
		t.Run(cmd, func(t *testing.T) {
			var r struct {
				code   int
				stderr string
			}
			fifotest.Promptly(t, fifo, func() error {
				r.code, _, r.stderr = runCmd(t, "", cmd, fifo)
				return nil
			})
			if r.code != 1 || !strings.Contains(r.stderr, fifo+" is a named pipe (FIFO)") {
				t.Fatalf("exit %d, stderr %q; want 1 and the FIFO named", r.code, r.stderr)
			}
		})
	}
}
