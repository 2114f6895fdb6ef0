package lint

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// modulePath is the import path of the module's root package.
const modulePath = "github.com/agentctx/agentctx"

// layerOf returns the layer of a package of the module by its directory
// (slash-separated, relative to the module root): "app", "lib", "base" or
// "testkit" for one under internal/ (CONTRIBUTING.md, "Layers"), "public"
// for the packages users import, "tool" for what builds the binary, the
// benchmarks and the examples (cmd, bench, examples), and "" for a
// package directly under internal/, which has no layer.
func layerOf(dir string) string {
	first, rest, _ := strings.Cut(dir, "/")
	switch first {
	case "internal":
		layer, _, ok := strings.Cut(rest, "/")
		switch {
		case !ok:
			return ""
		case layer == "app", layer == "lib", layer == "base", layer == "testkit":
			return layer
		}
		return ""
	case "cmd", "bench", "examples":
		return "tool"
	}
	return "public"
}

// mayImport says which layers a layer's non-test code may import.
var mayImport = map[string][]string{
	"base":    {"base"},
	"lib":     {"base", "lib", "public"},
	"public":  {"base", "lib", "public"},
	"app":     {"base", "lib", "public", "app"},
	"tool":    {"base", "lib", "public", "app", "testkit", "tool"},
	"testkit": {"base", "lib", "public", "app", "testkit"},
}

// Every package under internal/ is in one of four layers, and a layer's
// non-test code imports only the layers below it (CONTRIBUTING.md,
// "Layers"): base imports nothing of the module but base; lib and the
// public packages import base, lib and public packages; app (the
// composition root) imports those; testkit (what tests and benchmarks
// use) imports anything but the tools. The public packages never import
// app or testkit.
func TestLayers(t *testing.T) {
	root := moduleRoot(t)
	fset := token.NewFileSet()
	checked := 0
	for _, path := range sourceFiles(t, root) {
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.ToSlash(rel)
		from := layerOf(dir)
		if from == "" {
			t.Errorf("%s: a package directly under internal/ has no layer: move it to internal/app, lib, base or testkit", dir)
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			p, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				t.Fatal(err)
			}
			var to string
			switch {
			case p == modulePath:
				to = "public"
			case strings.HasPrefix(p, modulePath+"/"):
				to = layerOf(strings.TrimPrefix(p, modulePath+"/"))
			default:
				continue
			}
			checked++
			allowed := mayImport[from]
			ok := false
			for _, l := range allowed {
				ok = ok || l == to
			}
			if !ok {
				name, _ := filepath.Rel(root, path)
				t.Errorf("%s (%s) imports %s (%s): %s may import only %s", name, from, p, to, from, strings.Join(allowed, ", "))
			}
		}
	}
	if checked == 0 {
		t.Fatal("no import of the module was checked")
	}
}

// layerOf places each kind of directory in its layer.
func TestLayerOf(t *testing.T) {
	for dir, want := range map[string]string{
		".": "public", "pipeline": "public", "workspace/dirstore": "public",
		"internal/app/cli": "app", "internal/lib/wire": "lib", "internal/base/rawjson": "base",
		"internal/testkit/pgtest": "testkit", "internal/rawjson": "", "internal/other/x": "",
		"cmd/agentctx": "tool", "bench/cmd/costsim": "tool", "examples/agentloop": "tool",
	} {
		if got := layerOf(dir); got != want {
			t.Errorf("layerOf(%q) = %q, want %q", dir, got, want)
		}
	}
}

// The engine's package imports no API family and no storage backend,
// directly or through another package (issue 46): the families (openaix,
// anthropicx, the proxy, the wire and request code under internal/lib) sit
// above it, and a backend is chosen by whoever opens the stores. The
// edges still there are listed in engineImportsNow with why, and must
// still be there: the list only shrinks.
func TestEngineImportsNoFamilyOrBackend(t *testing.T) {
	root := moduleRoot(t)
	deps := moduleDeps(t, root, "pipeline")
	forbidden := func(p string) bool {
		switch {
		case strings.HasPrefix(p, "internal/lib/"), strings.HasPrefix(p, "internal/app/"),
			p == "proxy", strings.HasPrefix(p, "proxy/"), p == "openaix", p == "anthropicx":
			return true // a family
		case strings.HasPrefix(p, "session/") && p != "session/memsession",
			strings.HasPrefix(p, "workspace/") && p != "workspace/driver" && p != "workspace/memstore",
			p == "stores":
			return true // a backend, or what opens one
		}
		return false
	}
	seen := map[string]bool{}
	for p, via := range deps {
		if !forbidden(p) {
			continue
		}
		seen[p] = true
		if _, ok := engineImportsNow[p]; !ok {
			t.Errorf("pipeline imports %s (through %s): the engine imports no API family and no storage backend", p, via)
		}
	}
	for p := range engineImportsNow {
		if !seen[p] {
			t.Errorf("engineImportsNow lists %s, which pipeline no longer imports: remove it", p)
		}
	}
}

// engineImportsNow are the edges TestEngineImportsNoFamilyOrBackend lets
// through while the stores move out of the engine: path → why.
var engineImportsNow = map[string]string{
	"stores":             "pipeline.OpenStores opens the default stores when Options names none (issue 46)",
	"session/dirsession": "through stores",
	"workspace/dirstore": "through stores",
}

// moduleDeps returns the packages of the module that the non-test code of
// the package in dir imports, directly or not, each with the package that
// imports it (paths relative to the module root).
func moduleDeps(t *testing.T, root, dir string) map[string]string {
	t.Helper()
	deps := map[string]string{}
	fset := token.NewFileSet()
	queue := []string{dir}
	for len(queue) > 0 {
		from := queue[0]
		queue = queue[1:]
		matches, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(from), "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range matches {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				rel, ok := strings.CutPrefix(p, modulePath+"/")
				if !ok {
					continue
				}
				if _, done := deps[rel]; !done {
					deps[rel] = from
					queue = append(queue, rel)
				}
			}
		}
	}
	if len(deps) == 0 {
		t.Fatalf("%s imports nothing of the module: the walk is broken", dir)
	}
	return deps
}
