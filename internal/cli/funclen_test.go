package cli

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines is the longest a function of this package may be without a
// reason (see CONTRIBUTING.md, "Function length").
const maxFuncLines = 100

// Every function of the package is at most maxFuncLines long, or says why
// in a "//lint:long <reason>" line of its doc comment: a long function is
// split into named steps (a command: flags struct, validate, options, run).
func TestFunctionLength(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			checked++
			lines := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
			if lines <= maxFuncLines || longReason(fn.Doc) != "" {
				continue
			}
			t.Errorf("%s: %s is %d lines (at most %d): split it into named steps, or give the reason in a //lint:long <reason> line of its doc comment",
				fset.Position(fn.Pos()), fn.Name.Name, lines, maxFuncLines)
		}
	}
	if checked < 50 {
		t.Fatalf("checked %d functions: not the package's files?", checked)
	}
}

// longReason returns the reason of a "//lint:long <reason>" line of doc.
func longReason(doc *ast.CommentGroup) string {
	if doc == nil {
		return ""
	}
	for _, c := range doc.List {
		if r, ok := strings.CutPrefix(c.Text, "//lint:long"); ok && strings.TrimSpace(r) != "" {
			return strings.TrimSpace(r)
		}
	}
	return ""
}

func TestLongReason(t *testing.T) {
	for src, want := range map[string]string{
		"// f does x.\n//lint:long a table\nfunc f() {}": "a table",
		"// f does x.\n//lint:long\nfunc f() {}":         "",
		"// f does x.\nfunc f() {}":                      "",
		"func f() {}":                                    "",
	} {
		f, err := parser.ParseFile(token.NewFileSet(), "x.go", "package p\n"+src, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if got := longReason(f.Decls[0].(*ast.FuncDecl).Doc); got != want {
			t.Errorf("%q: reason %q, want %q", src, got, want)
		}
	}
}
