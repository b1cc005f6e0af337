package dataset

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/trainmaster/master/go/recordio"
)

// rootTree is a dataset root and what lies around it:
//
//	base/root/a.rio, b.rio, notes.txt
//	base/root/sub/c.rio
//	base/root/inner -> sub             (relative link inside the root)
//	base/root/abs-inner -> base/root/sub (absolute link inside the root)
//	base/root/evil/escape.rio -> ../../outside/secret.rio
//	base/root/evil/abs-escape.rio -> base/outside/secret.rio
//	base/root/evil/escdir -> ../../outside
//	base/outside/secret.rio, base/outside/more/d.rio
//	base/rootlink -> root
type rootTree struct {
	base, root, outside, rootLink string
}

func newRootTree(t *testing.T) rootTree {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tr := rootTree{base: base, root: filepath.Join(base, "root"), outside: filepath.Join(base, "outside"), rootLink: filepath.Join(base, "rootlink")}
	for _, d := range []string{"root/sub", "root/evil", "outside/more"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"root/a.rio", "root/b.rio", "root/sub/c.rio", "outside/secret.rio", "outside/more/d.rio"} {
		if err := recordio.WriteFile(filepath.Join(base, f), 3, func(i int) []byte { return []byte(f) }); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(base, "root/notes.txt"), []byte("notes"), 0o644); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		"root/inner":               "sub",
		"root/abs-inner":           filepath.Join(base, "root/sub"),
		"root/evil/escape.rio":     "../../outside/secret.rio",
		"root/evil/abs-escape.rio": filepath.Join(base, "outside/secret.rio"),
		"root/evil/escdir":         "../../outside",
		"rootlink":                 "root",
	} {
		if err := os.Symlink(target, filepath.Join(base, link)); err != nil {
			t.Fatal(err)
		}
	}
	return tr
}

// TestBuildWithRoot reports datasets inside, outside and reaching out of a
// root. Inside (through links that stay inside, relative patterns, the root
// named through a link) they are accepted; anything leading out is refused
// with an error naming the pattern or path and the root, before the outside
// is listed or opened.
func TestBuildWithRoot(t *testing.T) {
	tr := newRootTree(t)
	r := func(name string) string { return filepath.Join(tr.root, name) }
	o := func(name string) string { return filepath.Join(tr.outside, name) }
	t.Chdir(tr.base)
	for _, tc := range []struct {
		name     string
		root     string
		patterns []string
		files    []string // when accepted
		err      string   // else what the error says, besides the root
	}{
		{"glob inside", tr.root, []string{r("*.rio")}, []string{r("a.rio"), r("b.rio")}, ""},
		{"two levels", tr.root, []string{r("*.rio"), r("s*/*.rio")}, []string{r("a.rio"), r("b.rio"), r("sub/c.rio")}, ""},
		{"relative pattern and root", "root", []string{"root/sub/*.rio", "root/a.rio"}, []string{r("a.rio"), r("sub/c.rio")}, ""},
		{"links inside the root", tr.root, []string{r("inner/*.rio"), r("abs-inner/c.rio")}, []string{r("abs-inner/c.rio"), r("inner/c.rio")}, ""},
		{"root named through a link", tr.rootLink, []string{filepath.Join(tr.rootLink, "a.rio"), r("b.rio")},
			[]string{r("b.rio"), filepath.Join(tr.rootLink, "a.rio")}, ""},
		{"root itself as a link", tr.root, []string{tr.rootLink + "/sub/*.rio"}, nil,
			strconv.Quote(tr.rootLink+"/sub/*.rio") + " is outside the dataset root"},
		{"pattern outside", tr.root, []string{o("*.rio")}, nil, strconv.Quote(o("*.rio")) + " is outside the dataset root"},
		{"file outside", tr.root, []string{o("secret.rio")}, nil, strconv.Quote(o("secret.rio")) + " is outside the dataset root"},
		{"dot-dot out", tr.root, []string{tr.root + "/sub/../../outside/*.rio"}, nil,
			strconv.Quote(tr.root+"/sub/../../outside/*.rio") + " is outside the dataset root"},
		{"relative pattern outside", "root", []string{"outside/*.rio"}, nil, `"outside/*.rio" is outside the dataset root`},
		{"relative dot-dot out", "root", []string{"root/../outside/*.rio"}, nil, `"root/../outside/*.rio" is outside the dataset root`},
		{"dot-dot staying inside", tr.root, []string{tr.root + "/sub/../*.rio"}, []string{r("a.rio"), r("b.rio")}, ""},
		{"checked before any glob", tr.root, []string{r("none*.rio"), o("*.rio")}, nil, strconv.Quote(o("*.rio")) + " is outside the dataset root"},
		{"link to a file outside, named", tr.root, []string{r("evil/escape.rio")}, nil, strconv.Quote(r("evil/escape.rio")) + " is outside the dataset root"},
		{"absolute link to a file outside", tr.root, []string{r("evil/abs-escape.rio")}, nil, strconv.Quote(r("evil/abs-escape.rio")) + " is outside the dataset root"},
		{"link to a file outside, matched", tr.root, []string{r("evil/*.rio")}, nil, " is outside the dataset root"},
		{"link to a directory outside, named", tr.root, []string{r("evil/escdir/secret.rio")}, nil,
			strconv.Quote(r("evil/escdir/secret.rio")) + " is outside the dataset root"},
		{"link to a directory outside, listed", tr.root, []string{r("evil/escdir/*.rio")}, nil,
			"leads to " + strconv.Quote(r("evil/escdir")) + ", outside the dataset root"},
		{"glob through a link outside", tr.root, []string{r("evil/*/*.rio")}, nil, ", outside the dataset root"},
		{"the root itself", tr.root, []string{tr.root}, nil, strconv.Quote(tr.root) + " is a directory"},
		{"no such file inside", tr.root, []string{r("none.rio")}, nil, strconv.Quote(r("none.rio")) + ": no such file"},
		{"missing root", filepath.Join(tr.base, "none"), []string{r("a.rio")}, nil, "dataset root " + strconv.Quote(filepath.Join(tr.base, "none"))},
		{"root not a directory", r("a.rio"), []string{r("a.rio")}, nil, "dataset root " + strconv.Quote(r("a.rio"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds, err := BuildWith(Config{Root: tc.root}, tc.patterns, 1)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one saying %s", err, tc.err)
				}
				if strings.Contains(tc.err, "dataset root") && !strings.Contains(err.Error(), strconv.Quote(tc.root)) {
					t.Fatalf("error %v does not name the root %q", err, tc.root)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(ds.Files, tc.files) || ds.NumRecords() != int64(3*len(tc.files)) {
				t.Fatalf("files %q with %d records, want %q", ds.Files, ds.NumRecords(), tc.files)
			}
		})
	}
}

// TestRootOpensThroughTheRoot swaps a checked file for a link out of the
// root between the expansion and the indexing: the open, made through an
// os.Root, must still refuse it.
func TestRootOpensThroughTheRoot(t *testing.T) {
	tr := newRootTree(t)
	e, err := newExpansion(Config{Root: tr.root})
	if err != nil {
		t.Fatal(err)
	}
	defer e.close()
	a := filepath.Join(tr.root, "a.rio")
	files, err := e.expand([]string{a})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(a); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../outside/secret.rio", a); err != nil {
		t.Fatal(err)
	}
	if ix, err := e.index(files, 0); err == nil || !strings.Contains(err.Error(), "recordio: open "+a) {
		t.Fatalf("indexed %+v, error %v; want the open refused", ix, err)
	}
}
