//go:build linux || darwin

package dataset

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trainmaster/master/go/recordio"
	"github.com/trainmaster/master/internal/fifotest"
)

// TestBuildRefusesFIFO reports datasets holding a named pipe, named directly
// or matched by a glob among RecordIO files, with and without a root.
// Opening a FIFO for reading waits for a writer: the report must instead be
// refused at once, naming the FIFO.
func TestBuildRefusesFIFO(t *testing.T) {
	dir := t.TempDir()
	writeVariedFiles(t, dir, 5)
	fifo := fifotest.Make(t, dir, "f0002x.rio") // sorts among the files
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
			err := fifotest.Promptly(t, fifo, func() error {
				_, err := BuildWith(tc.cfg, tc.patterns, 2)
				return err
			})
			if !errors.Is(err, recordio.ErrNotRegular) || !strings.Contains(err.Error(), fifo+" is a named pipe (FIFO)") {
				t.Fatalf("error %v, want one saying %s is a named pipe", err, fifo)
			}
		})
	}
}
