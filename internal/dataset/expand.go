// Package dataset turns the path patterns a trainer reports into the list of
// RecordIO files of a dataset and builds its block index.
//
// What the package promises:
//   - The files of a dataset are the patterns' matches, sorted and without
//     duplicates; a pattern that is malformed or matches nothing, and a match
//     that is a directory, is an error naming it.
//   - Only regular files are indexed, and no open ever blocks: a FIFO, a
//     device or a socket among the matches is refused with an error naming
//     it (recordio.OpenFile checks the open descriptor).
//   - A report over a limit of its Config (number of patterns, bytes of one
//     pattern, bytes of all, files matched) is refused with an error naming
//     the limit and the value, before anything is listed or opened.
//   - With a Config.Root, nothing outside the root is listed, opened or
//     indexed, whatever the patterns and the symbolic links say.
//   - Errors quote at most QuoteBytes bytes of any string a client supplied
//     (see Quote), and never any byte of a file's contents.
//   - Build's result, and its error when a file cannot be indexed, do not
//     depend on how many files are indexed at once.
package dataset

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pkg/errors"
	"github.com/trainmaster/master/go/recordio"
)

// metaChars are the characters that make a pattern a glob (filepath.Match;
// a backslash escapes the next character).
const metaChars = `*?[\`

func hasMeta(pattern string) bool { return strings.ContainsAny(pattern, metaChars) }

// Expand is ExpandWith with the zero Config: no root, the default limits.
func Expand(patterns []string) ([]string, error) {
	return ExpandWith(Config{}, patterns)
}

// ExpandWith checks the patterns against the limits of cfg, expands each
// with filepath.Glob and returns the matching paths sorted and without
// duplicates. A pattern that is malformed or matches nothing is an error
// naming it; so is a path that names a directory. With cfg.Root, the paths
// are absolute (relative patterns are taken against the working directory)
// and each lies under the root (see Config.Root).
func ExpandWith(cfg Config, patterns []string) ([]string, error) {
	e, err := newExpansion(cfg)
	if err != nil {
		return nil, err
	}
	defer e.close()
	return e.expand(patterns)
}

// expansion expands one report and, for Build, opens its files: through the
// root when there is one.
type expansion struct {
	cfg  Config
	root *rootGuard // nil without a root
	// names holds, with a root, each file's path relative to the resolved
	// root, as it is opened.
	names []string
}

func newExpansion(cfg Config) (*expansion, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	e := &expansion{cfg: cfg}
	if cfg.Root != "" {
		if e.root, err = openRoot(cfg.Root); err != nil {
			return nil, err
		}
	}
	return e, nil
}

func (e *expansion) close() {
	if e.root != nil {
		e.root.close()
	}
}

func (e *expansion) expand(patterns []string) ([]string, error) {
	if err := e.cfg.checkReport(patterns); err != nil {
		return nil, err
	}
	globs := patterns
	if e.root != nil {
		// Every pattern is checked before any is expanded: a report
		// reaching out of the root lists nothing.
		globs = make([]string, len(patterns))
		for i, p := range patterns {
			var err error
			if globs[i], err = e.root.checkPattern(p); err != nil {
				return nil, err
			}
		}
	}
	var paths []string
	compactAt := e.cfg.MaxFiles // sort out duplicates past this, to bound memory
	for i, p := range patterns {
		matches, err := e.match(p, globs[i])
		if err != nil {
			return nil, err
		}
		paths = append(paths, matches...)
		if len(paths) > compactAt {
			if paths, err = e.sortCompact(paths, i < len(patterns)-1); err != nil {
				return nil, err
			}
			compactAt = len(paths) + e.cfg.MaxFiles
		}
	}
	paths, err := e.sortCompact(paths, false)
	if err != nil {
		return nil, err
	}
	for _, p := range paths {
		if err := e.check(p); err != nil {
			return nil, err
		}
	}
	return paths, nil
}

// match expands one pattern; glob is the pattern as made absolute and
// cleaned for a root.
func (e *expansion) match(pattern, glob string) ([]string, error) {
	var matches []string
	var err error
	if e.root != nil {
		matches, err = e.root.glob(pattern, glob)
	} else {
		matches, err = filepath.Glob(pattern)
	}
	if errors.Is(err, filepath.ErrBadPattern) {
		return nil, errors.WithMessagef(err, "dataset: bad pattern %s", Quote(pattern))
	} else if err != nil {
		return nil, err
	}
	if len(matches) == 0 {
		if !hasMeta(pattern) {
			return nil, noSuchFile(pattern)
		}
		return nil, errors.Errorf("dataset: pattern %s matches no file", Quote(pattern))
	}
	return matches, nil
}

func noSuchFile(path string) error {
	return errors.Errorf("dataset: %s: no such file", Quote(path))
}

// sortCompact sorts paths and drops duplicates, and refuses more than
// MaxFiles of them; early says more patterns are still to be expanded.
func (e *expansion) sortCompact(paths []string, early bool) ([]string, error) {
	slices.Sort(paths)
	paths = slices.Compact(paths)
	if len(paths) > e.cfg.MaxFiles {
		more := ""
		if early {
			more = "at least "
		}
		return nil, errors.Errorf("dataset: the patterns match %s%d files, more than the limit of %d (MaxFiles)",
			more, len(paths), e.cfg.MaxFiles)
	}
	return paths, nil
}

// check refuses a match that is a directory, and with a root one outside
// it, and records with a root the name to open it by. Other files that are
// not regular are refused when opened, where the check cannot race.
func (e *expansion) check(path string) error {
	if e.root != nil {
		name, err := e.root.file(path)
		e.names = append(e.names, name)
		return err
	}
	st, err := os.Stat(path)
	if err != nil {
		return pathError(err)
	}
	if st.IsDir() {
		return isDirectory(path)
	}
	return nil
}

func isDirectory(path string) error {
	return errors.Errorf("dataset: %s is a directory, not a RecordIO file", Quote(path))
}

// pathError prefixes err with "dataset: ", quoting the path of an
// *fs.PathError with Quote; the cause stays err's.
func pathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return errors.WithMessagef(pe.Err, "dataset: %s %s", pe.Op, Quote(pe.Path))
	}
	return errors.WithMessage(err, "dataset")
}

// index indexes file i of the expansion, as expand returned them.
func (e *expansion) index(files []string, i int) (*recordio.Index, error) {
	if e.root == nil {
		return recordio.IndexFile(files[i])
	}
	f, size, err := recordio.OpenFileIn(e.root.root, e.names[i], files[i])
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return recordio.ScanIndex(f, size, files[i])
}
