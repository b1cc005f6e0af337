// Command recordio writes, prints, summarises and verifies RecordIO files.
//
//	recordio write -o FILE [-compressor none|snappy|gzip] [-max-chunk-bytes N] [-framed] < records
//	recordio cat [-framed] FILE...
//	recordio stat [-json] FILE...
//	recordio verify FILE...
//
// FILE arguments may be glob patterns (quote them to keep the shell off).
// Records on stdin and stdout are one per line, or with -framed each a uint32
// little-endian length followed by its bytes, so records may hold newlines.
package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/namsral/flag"
	"github.com/pkg/errors"
)

const usage = `usage: recordio <command> [flags] [FILE...]

commands:
  write   -o FILE [-compressor none|snappy|gzip] [-max-chunk-bytes N] [-framed]
          read records from stdin, one per line (or length-framed with -framed),
          and write them to FILE
  cat     [-framed] FILE...
          write every record to stdout, one per line (or length-framed)
  stat    [-json] FILE...
          print the number of records and chunks of each file (headers only)
  verify  FILE...
          read and check every chunk, report each problem, exit 1 if any

FILE may be a glob pattern. Run 'recordio <command> -h' for a command's flags.
`

// errUsage marks errors that are the caller's wording, for exit status 2.
type errUsage struct{ msg string }

func (e errUsage) Error() string { return e.msg }

// stdio is what a command reads and writes.
type stdio struct {
	in       io.Reader
	out, err io.Writer
}

type command func(args []string, std stdio) error

var commands = map[string]command{
	"write":  runWrite,
	"cat":    runCat,
	"stat":   runStat,
	"verify": runVerify,
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run executes one command and returns the process exit status.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "-help" || args[0] == "help" {
		fmt.Fprint(stderr, usage)
		return 2
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "recordio: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	err := cmd(args[1:], stdio{stdin, stdout, stderr})
	switch e := err.(type) {
	case nil:
		return 0
	case errUsage:
		if e.msg != "" { // empty after -h: the flag set printed its defaults
			fmt.Fprintf(stderr, "recordio %s: %s\n", args[0], e.msg)
		}
		return 2
	case errFound:
		return 1 // verify has already printed each problem
	default:
		fmt.Fprintf(stderr, "recordio %s: %v\n", args[0], strings.TrimPrefix(err.Error(), "recordio: "))
		return 1
	}
}

// newFlags returns a flag set for a command whose flags may also come from
// RECORDIO_<FLAG> environment variables.
func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSetWithEnvPrefix("recordio "+name, "RECORDIO", flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// parse parses flags; a parse error or -h becomes an errUsage.
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return errUsage{}
	} else if err != nil {
		return errUsage{err.Error()}
	}
	return nil
}
