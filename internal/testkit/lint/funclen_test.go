package lint

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// maxFuncLines is the longest a function of the module may be without a
// reason (see CONTRIBUTING.md, "Function length"): the lines from its func
// keyword to its closing brace, both counted.
const maxFuncLines = 80

// allowed lists functions over maxFuncLines let through without a
// //lint:long reason while another change restructures them, as
// "path/from/module/root.go:Name" (a method as "(T).Name" or "(*T).Name")
// → why. Each entry must still be over the limit: an entry that no longer
// matches a long function fails the test, so the list only shrinks. (Empty
// today: no function of pipeline/ or proxy/ is over the limit.)
var allowed = map[string]string{
	// pipeline/proxy: being restructured (issue 25)
}

// Every function of the module's non-test, non-generated .go files is at
// most maxFuncLines long, or says why in a "//lint:long <reason>" comment
// on the line above its func keyword (the last line of its doc comment):
// a long function is split into named steps.
func TestFunctionLength(t *testing.T) {
	root := moduleRoot(t)
	fset := token.NewFileSet()
	checked, long := 0, map[string]bool{}
	for _, path := range sourceFiles(t, root) {
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		if ast.IsGenerated(f) {
			continue
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			t.Fatal(err)
		}
		rel = filepath.ToSlash(rel)
		for _, line := range misplacedLong(fset, f) {
			t.Errorf("%s:%d: //lint:long is not the line above a func (the last line of its doc comment)", rel, line)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			checked++
			line := fset.Position(fn.Pos()).Line
			pos := fmt.Sprintf("%s:%d", rel, line)
			lines := fset.Position(fn.End()).Line - line + 1
			key := rel + ":" + funcName(fn)
			reason, marked := longComment(fset, fn)
			switch {
			case marked && reason == "":
				t.Errorf("%s: %s: //lint:long without a reason", pos, funcName(fn))
			case marked && lines <= maxFuncLines:
				t.Errorf("%s: %s is %d lines (at most %d): drop its //lint:long", pos, funcName(fn), lines, maxFuncLines)
			case marked:
			case lines <= maxFuncLines:
			case allowed[key] != "":
				long[key] = true
			default:
				t.Errorf("%s: %s is %d lines (at most %d): split it into named steps, or give the reason in a //lint:long <reason> comment on the line above it",
					pos, funcName(fn), lines, maxFuncLines)
			}
		}
	}
	for key := range allowed {
		if !long[key] {
			t.Errorf("allowed: %s is not a function over %d lines without a //lint:long: drop it from the list", key, maxFuncLines)
		}
	}
	if checked < 1000 {
		t.Fatalf("checked %d functions: not the module's files?", checked)
	}
}

// moduleRoot returns the directory of the go.mod above the test's working
// directory (the package directory).
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = parent
	}
}

// sourceFiles returns the module's .go files under root, sorted: not
// _test.go files, and nothing under testdata, under a directory the go
// tool ignores (a name starting with "." or "_"), or under a directory with
// its own go.mod (another module, as contrib/*).
func sourceFiles(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path == root {
				return nil
			}
			if name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(files)
	return files
}

// longComment reports whether the line above fn's func keyword is a
// //lint:long comment, and its reason (empty when none is given).
func longComment(fset *token.FileSet, fn *ast.FuncDecl) (reason string, ok bool) {
	if fn.Doc == nil {
		return "", false
	}
	last := fn.Doc.List[len(fn.Doc.List)-1]
	if fset.Position(last.End()).Line != fset.Position(fn.Pos()).Line-1 {
		return "", false
	}
	return longReason(last.Text)
}

// longReason parses one comment: whether it is a //lint:long comment, and
// its reason.
func longReason(text string) (reason string, ok bool) {
	r, ok := strings.CutPrefix(text, "//lint:long")
	if !ok || (r != "" && r[0] != ' ' && r[0] != '\t') {
		return "", false
	}
	return strings.TrimSpace(r), true
}

// misplacedLong returns the lines of f's //lint:long comments that are not
// the line above a function's func keyword.
func misplacedLong(fset *token.FileSet, f *ast.File) []int {
	placed := map[*ast.Comment]bool{}
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Doc != nil {
			placed[fn.Doc.List[len(fn.Doc.List)-1]] = true
		}
	}
	var out []int
	for _, g := range f.Comments {
		for _, c := range g.List {
			if _, ok := longReason(c.Text); ok && !placed[c] {
				out = append(out, fset.Position(c.Pos()).Line)
			}
		}
	}
	return out
}

// funcName returns fn's name, a method's with its receiver type:
// "Name", "(T).Name" or "(*T).Name".
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	typ := fn.Recv.List[0].Type
	star := ""
	if s, ok := typ.(*ast.StarExpr); ok {
		star, typ = "*", s.X
	}
	switch x := typ.(type) {
	case *ast.IndexExpr:
		typ = x.X
	case *ast.IndexListExpr:
		typ = x.X
	}
	id, _ := typ.(*ast.Ident)
	if id == nil {
		return fmt.Sprintf("(?).%s", fn.Name.Name)
	}
	return "(" + star + id.Name + ")." + fn.Name.Name
}

func TestLongComment(t *testing.T) {
	for _, c := range []struct {
		src, reason    string
		marked, placed bool
	}{
		{"// f does x.\n//\n//lint:long a table\nfunc f() {}", "a table", true, true},
		{"//lint:long a state machine\nfunc f() {}", "a state machine", true, true},
		{"// f does x.\n//lint:long\nfunc f() {}", "", true, true},
		{"// f does x.\n//lint:long \t\nfunc f() {}", "", true, true},
		{"//lint:long a table\n// f does x.\nfunc f() {}", "", false, false},
		{"//lint:long a table\n\n// f does x.\nfunc f() {}", "", false, false},
		{"//lint:longer a table\nfunc f() {}", "", false, true},
		{"// f does x.\nfunc f() {}", "", false, true},
		{"func f() {}", "", false, true},
	} {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, "x.go", "package p\n"+c.src, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		reason, marked := longComment(fset, f.Decls[0].(*ast.FuncDecl))
		if reason != c.reason || marked != c.marked {
			t.Errorf("%q: longComment = %q, %v; want %q, %v", c.src, reason, marked, c.reason, c.marked)
		}
		if placed := len(misplacedLong(fset, f)) == 0; placed != c.placed {
			t.Errorf("%q: placed = %v, want %v", c.src, placed, c.placed)
		}
	}
}
