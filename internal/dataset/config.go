package dataset

import (
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/pkg/errors"
)

// The default limits of a Config. A report over one of them cannot be
// stored or served sensibly and is refused before any file is touched.
const (
	// DefaultMaxPatterns bounds the number of patterns of a report.
	DefaultMaxPatterns = 10000
	// DefaultMaxPatternBytes bounds the bytes of one pattern: PATH_MAX on
	// Linux, so no longer pattern can name a file.
	DefaultMaxPatternBytes = 4096
	// DefaultMaxTotalBytes bounds the bytes of all patterns together: they
	// are stored in one etcd value, far below etcd's request limit.
	DefaultMaxTotalBytes = 64 << 10
	// DefaultMaxFiles bounds the number of distinct files the patterns
	// match.
	DefaultMaxFiles = 1000000
)

// Config says where a dataset may be and how large its report may be. The
// zero Config is Build's: no root and the default limits.
type Config struct {
	// Root, if not empty, is the directory every file of the dataset must
	// resolve to (following symbolic links, Root's own included) a path
	// inside of. A pattern is refused before any directory is listed when
	// the fixed part of it (up to the last separator before its first glob
	// metacharacter, cleaned and made absolute against the working
	// directory) is not under Root, a directory is listed only once it
	// resolves under Root, and a match that resolves elsewhere is refused
	// without being opened. Files are then opened through an os.Root of
	// the resolved Root, so a symbolic link changed after the checks cannot
	// lead out of it either. A relative Root is taken against the working
	// directory.
	Root string

	// MaxPatterns is the most patterns a report may have; 0 means
	// DefaultMaxPatterns.
	MaxPatterns int
	// MaxPatternBytes is the most bytes one pattern may have; 0 means
	// DefaultMaxPatternBytes.
	MaxPatternBytes int
	// MaxTotalBytes is the most bytes all patterns may have together; 0
	// means DefaultMaxTotalBytes.
	MaxTotalBytes int
	// MaxFiles is the most distinct files the patterns may match, at most
	// math.MaxInt32 (a chunk's file number is 32 bits); 0 means
	// DefaultMaxFiles.
	MaxFiles int
}

// withDefaults returns c with every zero limit set to its default, or an
// error if a limit is negative or too large.
func (c Config) withDefaults() (Config, error) {
	for _, l := range []struct {
		name  string
		value *int
		def   int
		max   int
	}{
		{"MaxPatterns", &c.MaxPatterns, DefaultMaxPatterns, math.MaxInt},
		{"MaxPatternBytes", &c.MaxPatternBytes, DefaultMaxPatternBytes, math.MaxInt},
		{"MaxTotalBytes", &c.MaxTotalBytes, DefaultMaxTotalBytes, math.MaxInt},
		{"MaxFiles", &c.MaxFiles, DefaultMaxFiles, math.MaxInt32},
	} {
		switch {
		case *l.value == 0:
			*l.value = l.def
		case *l.value < 0 || *l.value > l.max:
			return c, errors.Errorf("dataset: Config.%s is %d; want 0 (the default, %d) to %d", l.name, *l.value, l.def, l.max)
		}
	}
	return c, nil
}

// CheckReport refuses a list of patterns over the limits of c, or with an
// empty pattern, touching no file: a caller can refuse such a report before
// it waits for anything. Build and Expand check the same.
func (c Config) CheckReport(patterns []string) error {
	c, err := c.withDefaults()
	if err != nil {
		return err
	}
	return c.checkReport(patterns)
}

// checkReport refuses a list of patterns over the limits of c (with its
// defaults set), or with an empty pattern. It reads only the lengths, so a
// report of millions of patterns is refused at once.
func (c Config) checkReport(patterns []string) error {
	if len(patterns) == 0 {
		return errors.New("dataset: no paths given")
	}
	if len(patterns) > c.MaxPatterns {
		return errors.Errorf("dataset: %d patterns, more than the limit of %d (MaxPatterns)", len(patterns), c.MaxPatterns)
	}
	total := 0
	for i, p := range patterns {
		if p == "" {
			return errors.Errorf("dataset: pattern %d of %d is empty", i+1, len(patterns))
		}
		if len(p) > c.MaxPatternBytes {
			return errors.Errorf("dataset: pattern %d of %d, %s, is %d bytes, more than the limit of %d (MaxPatternBytes)",
				i+1, len(patterns), Quote(p), len(p), c.MaxPatternBytes)
		}
		total += len(p)
	}
	if total > c.MaxTotalBytes {
		return errors.Errorf("dataset: the %d patterns take %d bytes, more than the limit of %d (MaxTotalBytes)",
			len(patterns), total, c.MaxTotalBytes)
	}
	return nil
}

// QuoteBytes is the most bytes of a string Quote shows.
const QuoteBytes = 200

// Quote returns s quoted as by %q when it has at most QuoteBytes bytes, and
// otherwise its first QuoteBytes bytes (fewer, to end on a whole character)
// quoted and followed by "..." and the length of s. Use it for every string
// a client supplies that goes into an error or a log line: however long the
// string, the message stays short, and control characters are escaped.
func Quote(s string) string {
	if len(s) <= QuoteBytes {
		return strconv.Quote(s)
	}
	cut := QuoteBytes
	for cut > QuoteBytes-utf8.UTFMax && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s... (%d bytes)", strconv.Quote(s[:cut]), len(s))
}

// describe names a list of patterns in an error: the pattern itself if
// there is one, else how many and the first.
func describe(patterns []string) string {
	if len(patterns) == 1 {
		return "pattern " + Quote(patterns[0])
	}
	return fmt.Sprintf("%d patterns (the first %s)", len(patterns), Quote(patterns[0]))
}
