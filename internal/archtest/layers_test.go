package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/trainmaster/master/"

// layers ranks every package of the module: a package imports only
// packages of a lower layer (or its own test helpers, below it). A new
// package fails the test until it is given a layer here.
var layers = map[string]int{
	// 0: the public contract and formats, and leaves that know nothing of
	// the master.
	"go/wire": 0, "go/recordio": 0, "go/discovery": 0,
	"internal/credfile": 0, "internal/proc": 0, "internal/fifotest": 0,
	"internal/election": 0, "internal/etcdembed": 0, "internal/ratelog": 0,

	// 1: pure logic and the edges that know only the contract.
	"internal/dataset": 1, "internal/taskqueue": 1, "internal/rendezvous": 1, "internal/trainerport": 1,
	"internal/etcdconn": 1, "internal/etcdembed/etcdtest": 1,
	"go/client": 1, "go/client/clienttest": 1, "internal/masterbench": 1,
	"internal/statusapi": 1,

	// 2: the service.
	"internal/master": 2,

	// 3: what plugs into the service: its store, its observer, its status.
	"internal/trainerport/porttest": 2, "internal/watch": 2,
	"internal/master/mastertest": 3, "internal/etcdstore": 3, "internal/monitor": 3,

	// 4: a term of leadership, the pages, the watch.
	"internal/leader": 4, "internal/statusweb": 4,

	// 5: the binaries.
	"cmd/master": 5, "cmd/trainer": 5, "cmd/demo": 5, "cmd/chaos": 5,
	"cmd/recordio": 5, "cmd/etcd-embed": 5, "internal/archtest": 5,
}

// noRPC are the packages whose dependencies must not include net/rpc: the
// transport lives in internal/trainerport alone.
var noRPC = []string{"internal/etcdstore", "internal/monitor", "internal/taskqueue", "internal/rendezvous", "internal/statusweb", "internal/master"}

type pkg struct {
	path    string // without the module prefix
	imports []string
	deps    []string
}

func list(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}|{{join .Imports \" \"}}|{{join .Deps \" \"}}", "./...")
	cmd.Dir = root(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	for line := range strings.Lines(strings.TrimSpace(string(out))) {
		parts := strings.SplitN(strings.TrimSpace(line), "|", 3)
		if !strings.HasPrefix(parts[0], module) {
			continue
		}
		pkgs = append(pkgs, pkg{path: strings.TrimPrefix(parts[0], module), imports: strings.Fields(parts[1]), deps: strings.Fields(parts[2])})
	}
	return pkgs
}

func root(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestImportsGoDownTheLayers(t *testing.T) {
	for _, p := range list(t) {
		rank, ok := layers[p.path]
		if !ok {
			t.Errorf("package %s has no layer: give it one in layers (and in doc/architecture.md)", p.path)
			continue
		}
		for _, imp := range p.imports {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			imp = strings.TrimPrefix(imp, module)
			if r, ok := layers[imp]; ok && r >= rank {
				t.Errorf("%s (layer %d) imports %s (layer %d): imports go down the layers only", p.path, rank, imp, r)
			}
		}
	}
}

func TestTransportStaysInThePort(t *testing.T) {
	for _, p := range list(t) {
		if slices.Contains(noRPC, p.path) && slices.Contains(p.deps, "net/rpc") {
			t.Errorf("%s depends on net/rpc: the transport belongs to internal/trainerport", p.path)
		}
		if p.path == "internal/trainerport" {
			for _, d := range p.deps {
				if strings.HasPrefix(d, module) && d != module+"go/wire" {
					t.Errorf("internal/trainerport depends on %s: the port knows only go/wire", d)
				}
			}
		}
		if p.path == "internal/master" && slices.Contains(p.imports, "crypto/tls") {
			t.Errorf("internal/master imports crypto/tls: TLS is the port's")
		}
	}
}

// Limits of size: a file a reader can hold, a function a reader can follow.
const (
	maxFileLines = 450
	maxFuncLines = 80
)

func TestSizes(t *testing.T) {
	dir := root(t)
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); strings.HasPrefix(name, ".") || name == "testdata" || name == "python" || path == filepath.Join(dir, "docker", "k8s") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		checkFile(t, dir, path)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func checkFile(t *testing.T, dir, path string) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, 0)
	if err != nil {
		t.Errorf("%s: %v", path, err)
		return
	}
	rel, _ := filepath.Rel(dir, path)
	checkErrorStyle(t, rel, f)
	if n := fset.Position(f.FileEnd).Line; n > maxFileLines {
		t.Errorf("%s has %d lines: split it by what it holds (at most %d)", rel, n, maxFileLines)
	}
	ast.Inspect(f, func(n ast.Node) bool {
		var body *ast.BlockStmt
		var name string
		switch fn := n.(type) {
		case *ast.FuncDecl:
			body, name = fn.Body, fn.Name.Name
		case *ast.FuncLit:
			body, name = fn.Body, "a function literal"
		}
		if body != nil {
			start, end := fset.Position(n.Pos()).Line, fset.Position(body.End()).Line
			if end-start+1 > maxFuncLines {
				t.Errorf("%s:%d: %s has %d lines (at most %d)", rel, start, name, end-start+1, maxFuncLines)
			}
		}
		return true
	})
}

// checkErrorStyle keeps one way to make and wrap errors:
// github.com/pkg/errors (go/wire.WithKind where an error has two causes).
func checkErrorStyle(t *testing.T, rel string, f *ast.File) {
	for _, imp := range f.Imports {
		if imp.Path.Value == `"errors"` {
			t.Errorf("%s imports the standard library's errors: use github.com/pkg/errors", rel)
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if ok && sel.Sel.Name == "Errorf" {
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "fmt" {
				t.Errorf("%s uses fmt.Errorf: use github.com/pkg/errors (Errorf, Wrapf, WithMessagef) or wire.WithKind", rel)
				return false
			}
		}
		return true
	})
}
