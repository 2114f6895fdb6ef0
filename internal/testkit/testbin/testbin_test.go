package testbin

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, root, rel, s string) {
	t.Helper()
	p := filepath.Join(root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The key changes with any source, asset, go.mod or environment that
// changes the build, and with nothing else.
func TestSourceKey(t *testing.T) {
	root := t.TempDir()
	write(t, root, "go.mod", "module m\n")
	write(t, root, "main.go", "package main\nfunc main() {}\n")
	write(t, root, "web/index.html", "<p>")
	key := func() string {
		t.Helper()
		k, err := sourceKey(root)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	base := key()
	for _, rel := range []string{"main_test.go", "testdata/x.json", ".git/HEAD", "sub/go.mod", "sub/x.go", "README.md", "pkg/doc.md"} {
		write(t, root, rel, "ignored")
		if k := key(); k != base {
			t.Errorf("writing %s changed the key", rel)
		}
	}
	write(t, root, "web/embed.go", "package web\n//go:embed *\nvar fs embed.FS\n")
	base = key()
	for _, rel := range []string{"main.go", "web/index.html", "web/notes.md", "go.mod", "go.sum", "pkg/a.go"} {
		write(t, root, rel, "changed "+rel)
		k := key()
		if k == base {
			t.Errorf("writing %s did not change the key", rel)
		}
		base = k
	}
	t.Setenv("GOFLAGS", "-tags=x")
	if key() == base {
		t.Error("GOFLAGS did not change the key")
	}
}

// Agentctx builds a binary that runs, once: a second process finds it in
// the cache.
func TestAgentctx(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go not in PATH")
	}
	bin := Agentctx(t)
	out, err := exec.CommandContext(t.Context(), bin, "--help").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "agentctx") {
		t.Fatalf("%s --help: %v\n%s", bin, err, out)
	}
	again, err := build()
	if err != nil || again != bin {
		t.Fatalf("second build: %q, %v; want the cached %q", again, err, bin)
	}
}

// Dir is one directory per source tree and name, kept across tests (and
// runs): what a test leaves in it, the next finds.
func TestDir(t *testing.T) {
	t.Setenv("AGENTCTX_TESTBIN_CACHE", t.TempDir())
	var first string
	t.Run("first", func(t *testing.T) {
		first = Dir(t, "gobin")
		if !strings.HasPrefix(first, Cache()+string(filepath.Separator)) || filepath.Base(first) != "gobin" {
			t.Errorf("Dir = %s, want a gobin directory in %s", first, Cache())
		}
		if err := os.WriteFile(filepath.Join(first, "kept"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("again", func(t *testing.T) { // the first test's lock released at its end
		if d := Dir(t, "gobin"); d != first {
			t.Errorf("Dir = %s, then %s", first, d)
		}
		if _, err := os.Stat(filepath.Join(first, "kept")); err != nil {
			t.Error(err)
		}
		if d := Dir(t, "other"); d == first || filepath.Dir(d) != filepath.Dir(first) {
			t.Errorf("Dir(other) = %s beside %s", d, first)
		}
	})
}
