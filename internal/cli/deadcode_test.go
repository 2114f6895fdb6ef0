package cli_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoReflectMethodLookup guards the size of the binary. A method
// looked up by a name known only at run time (reflect's MethodByName, as
// text/template does for every template it executes, cobra's
// Set*Template included) makes the linker keep every exported method of
// every type it keeps: the SDKs' thousands of types then cost 33 MB more
// (80.8 MB stripped instead of 47.7 MB; BENCHMARKS.md, "Release build").
// No file of the program may use them.
func TestNoReflectMethodLookup(t *testing.T) {
	root := filepath.Join("..", "..")
	banned := []string{`"text/template"`, `"html/template"`, "MethodByName(", "SetVersionTemplate(", "SetUsageTemplate(", "SetHelpTemplate("}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == "testdata" || n == "node_modules" || strings.HasPrefix(n, ".") && path != root {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, s := range banned {
			if strings.Contains(string(b), s) {
				t.Errorf("%s uses %s: it switches off the linker's dead-code elimination for the whole binary", path, s)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
