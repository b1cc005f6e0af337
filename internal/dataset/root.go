package dataset

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/pkg/errors"
)

// rootGuard confines an expansion to a dataset root (Config.Root). Paths are
// checked by resolving their symbolic links with filepath.EvalSymlinks; what
// is listed or opened is then reached through an os.Root of the resolved
// root by the resolved name, so a link changed after the check still cannot
// lead out.
type rootGuard struct {
	given string // Config.Root, for errors
	abs   string // given, absolute and clean
	real  string // abs with its symbolic links resolved
	cwd   string // the working directory relative patterns are taken against
	root  *os.Root
	dirs  map[string]string // directory of a match -> its resolved form, or "" if outside
}

func openRoot(dir string) (*rootGuard, error) {
	cwd, err := os.Getwd()
	if err != nil {
		return nil, errors.WithMessage(err, "dataset: working directory")
	}
	g := &rootGuard{given: dir, cwd: cwd, dirs: make(map[string]string)}
	g.abs = g.absolute(dir)
	if g.real, err = filepath.EvalSymlinks(g.abs); err != nil {
		return nil, errors.WithMessagef(err, "dataset: the dataset root %s", Quote(dir))
	}
	if g.root, err = os.OpenRoot(g.real); err != nil {
		return nil, errors.WithMessagef(err, "dataset: the dataset root %s", Quote(dir))
	}
	return g, nil
}

func (g *rootGuard) close() { g.root.Close() }

// absolute returns path cleaned and, if relative, joined to the working
// directory.
func (g *rootGuard) absolute(path string) string {
	if filepath.IsAbs(path) {
		return filepath.Clean(path)
	}
	return filepath.Join(g.cwd, path)
}

// within reports whether path, absolute and clean, is dir or under it.
func within(dir, path string) bool {
	if path == dir {
		return true
	}
	if !strings.HasSuffix(dir, string(filepath.Separator)) {
		dir += string(filepath.Separator)
	}
	return strings.HasPrefix(path, dir)
}

// rel returns resolved, which is within g.real, relative to it.
func (g *rootGuard) rel(resolved string) string {
	rel := strings.TrimPrefix(strings.TrimPrefix(resolved, g.real), string(filepath.Separator))
	if rel == "" {
		return "."
	}
	return rel
}

// fixedPart returns the directory of the absolute, clean pattern that holds
// every match: the pattern itself if it has no metacharacter, else its part
// up to the last separator before the first one.
func fixedPart(pattern string) string {
	i := strings.IndexAny(pattern, metaChars)
	if i < 0 {
		return pattern
	}
	j := strings.LastIndexByte(pattern[:i], filepath.Separator)
	if j <= 0 {
		return string(filepath.Separator)
	}
	return pattern[:j]
}

// checkPattern refuses a pattern whose fixed part is not under the root,
// the root as given or as resolved; it touches no file. It returns the
// pattern absolute and clean, the form it is expanded in.
func (g *rootGuard) checkPattern(pattern string) (string, error) {
	abs := g.absolute(pattern)
	if fixed := fixedPart(abs); !within(g.abs, fixed) && !within(g.real, fixed) {
		return "", errors.Errorf("dataset: pattern %s is outside the dataset root %s", Quote(pattern), Quote(g.given))
	}
	return abs, nil
}

// glob expands abs, the absolute and clean form of pattern, as filepath.Glob
// would, listing a directory only after resolving it under the root. A
// pattern without metacharacters is returned as it is: file checks it.
func (g *rootGuard) glob(pattern, abs string) ([]string, error) {
	for _, p := range []string{pattern, abs} { // cleaning may hide a malformed part
		if _, err := filepath.Match(p, ""); err != nil {
			return nil, err
		}
	}
	if !hasMeta(abs) {
		return []string{abs}, nil
	}
	fixed := fixedPart(abs)
	dirs := []string{fixed}
	for _, elem := range strings.Split(abs[len(fixed):], string(filepath.Separator)) {
		if elem == "" {
			continue
		}
		var next []string
		for _, dir := range dirs {
			names, err := g.list(pattern, dir)
			if err != nil {
				return nil, err
			}
			for _, name := range names {
				if ok, _ := filepath.Match(elem, name); ok { // elem is well-formed: abs is
					next = append(next, filepath.Join(dir, name))
				}
			}
		}
		dirs = next
	}
	return dirs, nil
}

// list returns the sorted names in dir, a directory a pattern leads to, or
// an error if dir resolves outside the root. Like filepath.Glob, it lists
// nothing, without error, when dir is not a directory or cannot be read.
func (g *rootGuard) list(pattern, dir string) ([]string, error) {
	resolved, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, nil
	}
	if !within(g.real, resolved) {
		return nil, errors.Errorf("dataset: pattern %s leads to %s, outside the dataset root %s",
			Quote(pattern), Quote(dir), Quote(g.given))
	}
	rel := g.rel(resolved)
	if st, err := g.root.Lstat(rel); err != nil || !st.IsDir() {
		return nil, nil
	}
	f, err := g.root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, nil
	}
	slices.Sort(names)
	return names, nil
}

// file checks a match: it must resolve under the root and not be a
// directory. It returns the match's resolved path relative to the root,
// which it is opened by.
func (g *rootGuard) file(path string) (string, error) {
	resolved, st, err := g.resolve(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", noSuchFile(path)
	} else if err != nil {
		return "", pathError(err)
	}
	if !within(g.real, resolved) {
		return "", errors.Errorf("dataset: %s is outside the dataset root %s", Quote(path), Quote(g.given))
	}
	if st.IsDir() {
		return "", isDirectory(path)
	}
	return g.rel(resolved), nil
}

// resolve returns path, absolute and clean, with its symbolic links
// resolved, and the Lstat of the result when it is within the root. The
// directories of the matches are resolved once each: most of a dataset's
// files share a few. A match whose directory resolves outside the root is
// outside whatever its last element is, and is not looked at further.
func (g *rootGuard) resolve(path string) (string, fs.FileInfo, error) {
	if path == g.abs || path == g.real { // the root itself, whose parent is outside
		st, err := os.Lstat(g.real)
		return g.real, st, err
	}
	dir, base := filepath.Split(path)
	rdir, ok := g.dirs[dir]
	if !ok {
		var err error
		if rdir, err = filepath.EvalSymlinks(dir); err != nil {
			return "", nil, err
		}
		g.dirs[dir] = rdir
	}
	if !within(g.real, rdir) {
		return rdir, nil, nil
	}
	resolved := filepath.Join(rdir, base)
	st, err := os.Lstat(resolved)
	if err != nil || st.Mode()&fs.ModeSymlink == 0 {
		return resolved, st, err
	}
	if resolved, err = filepath.EvalSymlinks(path); err != nil || !within(g.real, resolved) {
		return resolved, nil, err
	}
	st, err = os.Lstat(resolved)
	return resolved, st, err
}
