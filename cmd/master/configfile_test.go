package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trainmaster/master/internal/taskqueue"
)

// writeConfig writes a -config file holding content.
func writeConfig(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "master.conf")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestConfigFileErrors: every error of a -config file names the file and
// the line, quotes and cuts its bytes, and says what would be accepted; a
// flag given twice is refused, naming both lines.
func TestConfigFileErrors(t *testing.T) {
	for _, tc := range []struct {
		name, content string
		want          []string // %s: the file
	}{
		{"line too long", "passes 3\ndataset /" + strings.Repeat("a", 70000) + "\n",
			[]string{"-config %s:2: line longer than 65536 bytes: want one flag and its value a line"}},
		{"bad value", "# the passes\npasses three\n",
			[]string{`-config %s:2: invalid value "three" for flag passes: want an integer`}},
		{"bad duration", "task-timeout 5 minutes\n",
			[]string{`-config %s:1: invalid value "5 minutes" for flag task-timeout: want a duration such as`}},
		{"unknown flag", "passes 3\n\npases 5\n",
			[]string{`-config %s:3: unknown flag "pases": want a flag of master -help, without its dash`}},
		{"no flag", "passes 3\n passes 5\n",
			[]string{`-config %s:2: " passes 5" does not begin with a flag's name: want "flag value", "flag=value" or a "#" comment`}},
		{"binary file", "\x7fELF\x02\x01\x01\x00\x1b[2J \x00\x00\n\x00\x00",
			[]string{`-config %s:1: unknown flag "\x7fELF\x02\x01\x01\x00\x1b[2J"`}},
		{"long value", "passes " + strings.Repeat("9\x00", 3000) + "\n",
			[]string{`-config %s:1: invalid value "9\x009\x00`, `... (6000 bytes) for flag passes: want an integer`}},
		{"repeated flag", "passes 3\ntask-timeout 5m\npasses 5\n",
			[]string{"-config %s:3: flag passes given again, first at line 1: give each flag once"}},
		{"repeated as flag=value", "passes=3\npasses 3\n",
			[]string{"-config %s:2: flag passes given again, first at line 1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeConfig(t, tc.content)
			_, err := parseFlags([]string{"-config", path}, io.Discard)
			if err == nil {
				t.Fatal("the file was accepted")
			}
			for _, want := range tc.want {
				if want = strings.ReplaceAll(want, "%s", path); !strings.Contains(err.Error(), want) {
					t.Errorf("%q\nwant an error containing %q", err, want)
				}
			}
			if msg := err.Error(); len(msg) > 1000 || !safeText(msg) {
				t.Errorf("error of %d bytes or showing raw bytes: %q", len(msg), msg)
			}
		})
	}
}

// TestConfigFilePrecedence: a valid file sets the flags it gives, a flag
// given on the command line or by its MASTER_ variable keeps that value
// (the file's not even parsed), and the command line overrides the
// environment.
func TestConfigFilePrecedence(t *testing.T) {
	path := writeConfig(t, "# a comment\n\npasses 3\ntask-timeout=5m\nstragglers backup\nversion\nchunks-per-task 4\ntask-timeout-max nine\n")
	t.Setenv("MASTER_TASK_TIMEOUT_MAX", "9")
	for _, tc := range []struct {
		name             string
		args             []string
		env              string // MASTER_PASSES
		passes, maxTimes int
	}{
		{"file", nil, "", 3, 9},
		{"command line", []string{"-passes", "7"}, "", 7, 9},
		{"environment", nil, "8", 8, 9},
		{"command line over environment", []string{"-passes", "7"}, "8", 7, 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env != "" {
				t.Setenv("MASTER_PASSES", tc.env)
			}
			o, err := parseFlags(append([]string{"-config", path}, tc.args...), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if o.queue.Passes != tc.passes || o.queue.MaxTimeouts != tc.maxTimes || o.queue.Timeout != 5*time.Minute ||
				o.queue.Stragglers != taskqueue.StragglersBackup || !o.version || o.chunksPerTask != 4 {
				t.Fatalf("options %+v; want %d passes, %d timeouts, 5m, backup, version, 4 chunks", o, tc.passes, tc.maxTimes)
			}
		})
	}
	t.Run("MASTER_CONFIG", func(t *testing.T) {
		t.Setenv("MASTER_CONFIG", writeConfig(t, "passes 3\npasses 4\n"))
		if _, err := parseFlags(nil, io.Discard); err == nil || !strings.Contains(err.Error(), ":2: flag passes given again, first at line 1") {
			t.Fatalf("%v; want the repeat refused", err)
		}
	})
}
