package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestHostileConfigFilesStopTheMaster: the master process given a binary
// or contradictory -config or -datasets file exits with status 1 before
// it serves, its last line naming the file and the line once prefixed,
// and writes no byte of the file raw to the terminal.
func TestHostileConfigFilesStopTheMaster(t *testing.T) {
	binary := "\x1b]0;owned\x07\x1b[2J\x7fELF\x00\x01 \x9b\xff\n"
	for _, tc := range []struct {
		name, flag, content, want string // want: %s is the file
	}{
		{"binary -config", "-config", binary, `master: -config %s:1: unknown flag "\x1b]0;owned\a\x1b[2J\x7fELF\x00\x01"`},
		{"repeated flag", "-config", "passes 3\n# an override\npasses 5\n", "master: -config %s:3: flag passes given again, first at line 1"},
		{"binary -datasets", "-datasets", binary, `master: -datasets %s:1: invalid character '\x1b' looking for beginning of value`},
		{"declared twice", "-datasets", "[\n" + strings.Repeat(`{"name": "eval", "records": 10, "records_per_task": 1},`+"\n", 2) + `{"name": "train", "records": 1, "records_per_task": 1}]`,
			`master: -datasets %s:3: dataset "eval" declared twice, first at -datasets %s:2`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "hostile")
			if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second) // a master that accepts the file serves until killed
			defer cancel()
			cmd := exec.CommandContext(ctx, binPath, "-addr", "127.0.0.1:0", "-data-dir", t.TempDir(), tc.flag, path)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 {
				t.Fatalf("exit %v; want status 1:\n%s", err, lastLines(string(out), 10))
			}
			text := strings.TrimRight(string(out), "\n")
			last := text[strings.LastIndex(text, "\n")+1:]
			if want := strings.ReplaceAll(tc.want, "%s", path); !strings.HasPrefix(last, want) {
				t.Errorf("last line %q\nwant it to begin with %q", last, want)
			}
			if !safeText(string(out)) || strings.Contains(string(out), "master: master:") {
				t.Errorf("the output shows raw bytes or a doubled prefix: %q", out)
			}
		})
	}
}
