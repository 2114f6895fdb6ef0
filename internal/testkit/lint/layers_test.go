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
