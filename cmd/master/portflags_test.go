package main

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"

	osproc "github.com/trainmaster/master/internal/proc"
	"github.com/trainmaster/master/internal/trainerport"
)

// TestReadToken reads the trainer port's tokens from files.
func TestReadToken(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		content, want, err string
	}{
		{"s3cret\n", "s3cret", ""},
		{"  two words \r\n", "two words", ""},
		{"\n \n", "", "is empty"},
	} {
		path := filepath.Join(dir, "token")
		if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := readToken(path)
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%q: %q, %v; want %q, %q", tc.content, got, err, tc.want, tc.err)
		}
	}
	if _, err := readToken(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing file gave a token")
	}
}

// TestMaxConnsDefault: -max-conns defaults to what the file limit allows,
// and the start-up log says why, unless it was given: by flag, by its
// MASTER_ variable or by -config.
func TestMaxConnsDefault(t *testing.T) {
	def := trainerport.DefaultMaxConns(osproc.FileLimit())
	for _, tc := range []struct {
		name  string
		args  []string
		env   string // MASTER_MAX_CONNS
		conns int
	}{
		{"default", nil, "", def.MaxConns},
		{"flag", []string{"-max-conns", "500"}, "", 500},
		{"the default given", []string{"-max-conns", strconv.Itoa(def.MaxConns)}, "", def.MaxConns},
		{"environment", nil, "600", 600},
		{"config", []string{"-config", writeConfig(t, "max-conns 700\n")}, "", 700},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env != "" {
				t.Setenv("MASTER_MAX_CONNS", tc.env)
			}
			o, err := parseFlags(tc.args, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			log := logrus.New()
			log.SetOutput(&out)
			o.port.logExposure(log, "127.0.0.1:8080")
			cfg, err := o.port.serverConfig()
			if err != nil {
				t.Fatal(err)
			}
			said := strings.Contains(out.String(), "-max-conns defaults to")
			if cfg.Limits.MaxConns != tc.conns || said != (tc.name == "default") {
				t.Fatalf("-max-conns %d, want %d; the log:\n%s", cfg.Limits.MaxConns, tc.conns, out.String())
			}
		})
	}
	if _, err := parseFlags([]string{"-config", writeConfig(t, "max-conns lots\n")}, io.Discard); err == nil ||
		!strings.Contains(err.Error(), `invalid value "lots" for flag max-conns: want an integer`) {
		t.Fatalf("-config with max-conns lots: %v", err)
	}
}
