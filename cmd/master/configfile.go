package main

import (
	"bufio"
	"os"
	"strings"
	"time"

	"github.com/namsral/flag"
	"github.com/pkg/errors"

	"github.com/trainmaster/master/internal/dataset"
)

// The -config file: flags, one a line, as "flag value" or "flag=value"
// (the flag's name without its dash; a boolean flag alone means true),
// empty lines and lines beginning with "#" ignored. A flag set on the
// command line or by its MASTER_ variable keeps that value: the file only
// sets the others. Every flag is given at most once, and every error names
// the file and the line (doc/operations.md).

// maxConfigLineBytes bounds a line of the file (bufio's default token).
const maxConfigLineBytes = bufio.MaxScanTokenSize

// configPath is the value of -config. Its String is empty so that the flag
// package's Parse, which reads the file named by the flag "config" itself
// (keeping a repeated flag's first value and naming no line), leaves it to
// readConfig.
type configPath struct{ path string }

func (c *configPath) Set(path string) error { c.path = path; return nil }
func (c *configPath) String() string        { return "" }

// configLine is a flag the file sets.
type configLine struct {
	line        int
	name, value string
	hasValue    bool
}

// applyConfig sets the flags of fs that the -config file at path gives and
// neither the command line nor the environment set. It reads and checks
// the whole file first.
func applyConfig(fs *flag.FlagSet, path string) error {
	lines, err := readConfig(fs, path)
	if err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for _, l := range lines {
		if set[l.name] {
			continue
		}
		f := fs.Lookup(l.name)
		value := l.value
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() && !l.hasValue {
			value = "true"
		}
		if err := fs.Set(l.name, value); err != nil {
			return errors.Errorf("-config %s:%d: invalid value %s for flag %s: want %s", path, l.line, dataset.Quote(value), l.name, acceptedForm(f, err))
		}
	}
	return nil
}

// readConfig reads the -config file at path: its lines that set a flag,
// each a flag of fs given once. Its errors begin with -config and the file.
func readConfig(fs *flag.FlagSet, path string) ([]configLine, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, errors.WithMessage(err, "-config")
	}
	defer file.Close()
	var lines []configLine
	first := map[string]int{} // flag -> the line giving it
	scanner := bufio.NewScanner(file)
	scanner.Buffer(nil, maxConfigLineBytes)
	n := 0
	for scanner.Scan() {
		n++
		text := scanner.Text()
		if text == "" || text[0] == '#' {
			continue
		}
		l, err := parseConfigLine(fs, n, text)
		if err == nil && first[l.name] > 0 {
			err = errors.Errorf("flag %s given again, first at line %d: give each flag once (the command line and MASTER_ variables override the file)", l.name, first[l.name])
		}
		if err != nil {
			return nil, errors.WithMessagef(err, "-config %s:%d", path, n)
		}
		first[l.name] = n
		lines = append(lines, l)
	}
	if errors.Is(scanner.Err(), bufio.ErrTooLong) {
		return nil, errors.Errorf("-config %s:%d: line longer than %d bytes: want one flag and its value a line", path, n+1, maxConfigLineBytes)
	}
	return lines, errors.Wrapf(scanner.Err(), "-config %s:%d", path, n+1)
}

// parseConfigLine parses line n of the file, text: a flag of fs and its
// value, split at the first space or "=".
func parseConfigLine(fs *flag.FlagSet, n int, text string) (configLine, error) {
	l := configLine{line: n, name: text}
	if i := strings.IndexAny(text, " ="); i >= 0 {
		l.name, l.value, l.hasValue = text[:i], text[i+1:], true
	}
	switch {
	case l.name == "":
		return l, errors.Errorf("%s does not begin with a flag's name: want \"flag value\", \"flag=value\" or a \"#\" comment", dataset.Quote(text))
	case fs.Lookup(l.name) == nil:
		return l, errors.Errorf("unknown flag %s: want a flag of master -help, without its dash", dataset.Quote(l.name))
	}
	return l, nil
}

// acceptedForm says what a flag takes, for an error refusing err, its
// value: the form of the flag's type, else its own error, quoted.
func acceptedForm(f *flag.Flag, err error) string {
	var value any
	if g, ok := f.Value.(flag.Getter); ok {
		value = g.Get()
	}
	switch value.(type) {
	case bool:
		return "true or false"
	case int, int64:
		return "an integer"
	case uint, uint64:
		return "an integer, 0 or more"
	case float64:
		return "a number"
	case time.Duration:
		return "a duration such as 500ms, 30s, 5m or 1h30m"
	}
	return "what it takes (" + dataset.Quote(err.Error()) + ")"
}
