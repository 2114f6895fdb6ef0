// Package testbin builds the agentctx binary for the tests that run it as a
// child process, once per source tree: test binaries of several packages
// run at the same time (go test ./... starts one per package), so the build
// lands in a cache directory keyed by a hash of the module's sources and
// runs under a lock file every process takes; the first process builds,
// the others wait and reuse the result, and a later run of unchanged
// sources builds nothing. It is for tests only.
package testbin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctx/agentctx/internal/base/fsutil"
)

// Package is the import path of the command Agentctx builds.
const Package = "github.com/agentctx/agentctx/cmd/agentctx"

// buildTimeout bounds one build (a cold build on a loaded machine).
const buildTimeout = 10 * time.Minute

// keep is how long an unused build stays in the cache.
const keep = 72 * time.Hour

var (
	once    sync.Once
	binPath string
	binErr  error
)

// Agentctx returns the path of the agentctx binary built from the module's
// current sources, building it at most once per test process and once per
// source tree across processes. It skips the test when the go command is
// not in PATH and fails it when the build fails. The binary must not be
// modified or removed.
func Agentctx(t testing.TB) string {
	t.Helper()
	once.Do(func() { binPath, binErr = build() })
	if errors.Is(binErr, exec.ErrNotFound) {
		t.Skipf("cannot build agentctx: %v", binErr)
	}
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// Dir returns a directory named name, kept across test runs for the
// module's current sources (beside their agentctx build, pruned with it),
// and holds a lock on it until the test ends: a test that runs go install
// with GOBIN set to it finds the binary of unchanged sources up to date
// there (go install links nothing then), and builds and installs it for
// new sources, one process at a time. It fails the test when the sources
// cannot be hashed or the directory made.
func Dir(t testing.TB, name string) string {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	key, err := sourceKey(root)
	if err != nil {
		t.Fatalf("hash the sources: %v", err)
	}
	dir := filepath.Join(Cache(), key, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	touch(filepath.Dir(dir))
	ctx, cancel := context.WithTimeout(t.Context(), buildTimeout)
	defer cancel()
	unlock, err := fsutil.LockContext(ctx, dir+".lock")
	if err != nil {
		t.Fatalf("lock %s: %v", dir, err)
	}
	t.Cleanup(unlock)
	return dir
}

// Cache is the directory the builds are kept in: $AGENTCTX_TESTBIN_CACHE,
// else agentctx-testbin in the user's cache directory.
func Cache() string {
	if d := os.Getenv("AGENTCTX_TESTBIN_CACHE"); d != "" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "agentctx-testbin")
	}
	return filepath.Join(os.TempDir(), "agentctx-testbin")
}

func build() (string, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("go: %w", err)
	}
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	key, err := sourceKey(root)
	if err != nil {
		return "", fmt.Errorf("hash the sources: %w", err)
	}
	cache := Cache()
	dir := filepath.Join(cache, key)
	name := "agentctx"
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	bin := filepath.Join(dir, name)
	if _, err := os.Stat(bin); err == nil {
		touch(dir)
		return bin, nil
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	unlock, err := fsutil.LockContext(ctx, filepath.Join(cache, ".lock"))
	if err != nil {
		return "", fmt.Errorf("lock the build cache: %w", err)
	}
	defer unlock()
	if _, err := os.Stat(bin); err == nil {
		return bin, nil // another process built it while this one waited
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	// Build beside the final name, then rename: a binary at bin is always
	// whole.
	tmp := filepath.Join(dir, ".building-"+name)
	cmd := exec.CommandContext(ctx, goBin, "build", "-o", tmp, Package)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("go build %s: %v\n%s", Package, err, out)
	}
	if err := os.Rename(tmp, bin); err != nil {
		return "", err
	}
	prune(cache, key)
	return bin, nil
}

// moduleRoot finds the directory of go.mod from the working directory (a
// test runs in its package's directory).
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("testbin: no go.mod above the working directory")
		}
		dir = parent
	}
}

// sourceKey hashes what a build of the module depends on: every file of
// the module but tests, testdata, hidden directories and documents (*.md,
// unless a Go file of their directory embeds files): Go sources, go.mod,
// go.sum, embedded assets; and the toolchain and environment that change
// the output.
func sourceKey(root string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	for _, v := range []string{"GOFLAGS", "CGO_ENABLED", "GOEXPERIMENT", "GOAMD64", "GOTOOLCHAIN"} {
		fmt.Fprintf(h, "%s=%s\n", v, os.Getenv(v))
	}
	var files []string
	embeds := map[string]bool{} // directories with a Go file that embeds
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			// A nested module is not part of this one.
			if path != root {
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if !d.Type().IsRegular() || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		if strings.HasSuffix(name, ".go") {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if bytes.Contains(b, []byte("//go:embed")) {
				embeds[filepath.Dir(path)] = true
			}
		}
		files = append(files, path)
		return nil
	})
	if err != nil {
		return "", err
	}
	sort.Strings(files)
	for _, f := range files {
		if strings.HasSuffix(f, ".md") && !embedded(embeds, root, f) {
			continue
		}
		rel, _ := filepath.Rel(root, f)
		fmt.Fprintf(h, "%s\x00", filepath.ToSlash(rel))
		r, err := os.Open(f)
		if err != nil {
			return "", err
		}
		n, err := io.Copy(h, r)
		r.Close()
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "\x00%d\n", n)
	}
	return hex.EncodeToString(h.Sum(nil))[:24], nil
}

// embedded reports whether a Go file of f's directory, or of one above it
// within root, embeds files (a pattern may name a subdirectory).
func embedded(embeds map[string]bool, root, f string) bool {
	for dir := filepath.Dir(f); ; dir = filepath.Dir(dir) {
		if embeds[dir] {
			return true
		}
		if dir == root || dir == filepath.Dir(dir) {
			return false
		}
	}
}

// touch marks a build as used now, so prune keeps it.
func touch(dir string) {
	now := time.Now()
	os.Chtimes(dir, now, now)
}

// prune removes the builds not used for a while (the lock is held).
func prune(cache, current string) {
	entries, err := os.ReadDir(cache)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() || e.Name() == current || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > keep {
			os.RemoveAll(filepath.Join(cache, e.Name()))
		}
	}
}
