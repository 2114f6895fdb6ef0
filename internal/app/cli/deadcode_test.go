package cli_test

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
	root := filepath.Join("..", "..", "..")
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

// TestNoTemplateInTheDependencies is TestNoReflectMethodLookup for the
// packages the binary imports: a dependency that executes templates
// switches off the same elimination. google.golang.org/grpc does, through
// golang.org/x/net/trace (whose init serves its HTML pages with
// html/template): OpenTelemetry's OTLP/HTTP exporter imported it, and the
// default build grew from 77 MB to 125 MB (internal/base/otlphttp replaced it).
// text/template is imported by cobra alone, which executes its templates
// only through the Set*Template calls TestNoReflectMethodLookup bans.
func TestNoTemplateInTheDependencies(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: go list")
	}
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}:{{range .Imports}} {{.}}{{end}}", "../../../cmd/agentctx").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, ":")
		switch pkg {
		case "html/template", "golang.org/x/net/trace", "google.golang.org/grpc":
			t.Errorf("the binary imports %s: it switches off the linker's dead-code elimination of methods (BENCHMARKS.md, binary size)", pkg)
		}
		if pkg != "github.com/spf13/cobra" && pkg != "html/template" && slices.Contains(strings.Fields(imports), "text/template") {
			t.Errorf("%s imports text/template: executing a template switches off the linker's dead-code elimination of methods", pkg)
		}
	}
}
