// Package golden keeps golden transcripts for tests: files under the
// module's testdata/golden that pin outside behaviour byte for byte, a
// clear diff when a test's output departs from its file, and the -update
// flag that rewrites the files:
//
//	go test ./proxy ./anthropicx ./openaix -run Golden -update
//
// (name only packages that import golden: the flag is defined here, so a
// package whose tests define their own -update must not import golden).
// It is for tests only.
package golden

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/agentctx/agentctx/internal/base/fsutil"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden instead of comparing")

// Updating reports whether -update was given.
func Updating() bool { return *update }

// Path is the path of the golden file rel under the module's
// testdata/golden.
func Path(t testing.TB, rel string) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "testdata", "golden", filepath.FromSlash(rel))
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("golden: no go.mod above the working directory")
		}
		dir = parent
	}
}

// Check compares got with the golden file rel, or writes it with -update.
// On a difference it fails the test with the first differing lines of
// both and the command that regenerates the file.
func Check(t testing.TB, rel string, got []byte) {
	t.Helper()
	path := Path(t, rel)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		t.Fatalf("golden file %s is missing: run the test with -update to write it", path)
	}
	if err != nil {
		t.Fatal(err)
	}
	if d := Diff(want, got); d != "" {
		t.Errorf("output differs from the golden file %s (- golden, + now):\n%s\nIf the change is intended, regenerate: go test ./%s -run '%s' -update", path, d, pkgDir(t), t.Name())
	}
}

// pkgDir is the test's package directory relative to the module root.
func pkgDir(t testing.TB) string {
	wd, _ := os.Getwd()
	root := filepath.Dir(filepath.Dir(filepath.Dir(Path(t, "x"))))
	rel, err := filepath.Rel(root, wd)
	if err != nil || rel == "." {
		return "."
	}
	return filepath.ToSlash(rel)
}

// Diff returns "" when a and b are equal, else their differing hunks:
// lines of a marked "-", of b "+", with line numbers of a, each hunk
// headed by the last "===" line above it (the step of a transcript), at
// most 8 hunks of at most 20 lines a side.
func Diff(a, b []byte) string {
	if bytes.Equal(a, b) {
		return ""
	}
	al, bl := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	// same reports whether al[x:] and bl[y:] start with the same few
	// lines (one equal line, such as "}", is no place to resync).
	same := func(x, y int) bool {
		for k := range 3 {
			switch {
			case x+k >= len(al) || y+k >= len(bl):
				return x+k >= len(al) && y+k >= len(bl)
			case al[x+k] != bl[y+k]:
				return false
			}
		}
		return true
	}
	const window, most, hunks = 200, 20, 8
	var s strings.Builder
	section := ""
	n := 0
	for i, j := 0, 0; i < len(al) || j < len(bl); {
		if i < len(al) && j < len(bl) && al[i] == bl[j] {
			if strings.HasPrefix(al[i], "===") {
				section = al[i]
			}
			i, j = i+1, j+1
			continue
		}
		if n == hunks {
			s.WriteString("… more differences\n")
			break
		}
		n++
		di, dj := len(al)-i, len(bl)-j
	search:
		for d := 1; d <= 2*window; d++ {
			for x := max(0, d-window); x <= min(d, window); x++ {
				if same(i+x, j+d-x) {
					di, dj = x, d-x
					break search
				}
			}
		}
		if section != "" {
			fmt.Fprintf(&s, "@@ in %s\n", section)
		}
		for k := max(0, i-2); k < i; k++ {
			fmt.Fprintf(&s, "  %5d  %s\n", k+1, cut(al[k]))
		}
		side := func(mark string, lines []string, from, count int) {
			for k := from; k < from+count; k++ {
				if k-from == most {
					fmt.Fprintf(&s, "%s        … %d more lines\n", mark, from+count-k)
					break
				}
				fmt.Fprintf(&s, "%s %5d  %s\n", mark, k+1, cut(lines[k]))
			}
		}
		side("-", al, i, di)
		side("+", bl, j, dj)
		i, j = i+di, j+dj
	}
	return s.String()
}

// cut shortens a line for a diff.
func cut(l string) string {
	const most = 300
	if len(l) > most {
		return l[:most] + fmt.Sprintf("… (%d bytes)", len(l))
	}
	return l
}

// Body renders bytes for a transcript: their size and SHA-256 (which pin
// the exact bytes), then the JSON indented (whitespace outside strings
// only, so that a diff shows the members that changed), or the bytes as
// they are when they are not JSON.
func Body(b []byte) string {
	sum := sha256.Sum256(b)
	var s strings.Builder
	fmt.Fprintf(&s, "(%d bytes, sha256 %s)\n", len(b), hex.EncodeToString(sum[:8]))
	var out bytes.Buffer
	if json.Valid(b) && json.Indent(&out, b, "", "  ") == nil {
		s.Write(out.Bytes())
	} else {
		s.Write(b)
	}
	s.WriteByte('\n')
	return s.String()
}

// FixedDir returns the directory /tmp/agentctx-golden/name, empty, for
// the test alone: the paths a transcript shows (references name their
// artifacts' files) and the hashes and token counts that depend on them
// are then the same on every machine. Tests of other processes that ask
// for the same name wait for this one (a lock file beside the directory).
// It skips the test where /tmp is not a directory (Windows).
func FixedDir(t testing.TB, name string) string {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("golden transcripts use fixed paths under /tmp")
	}
	base := "/tmp/agentctx-golden"
	if err := os.MkdirAll(base, 0o777); err != nil {
		t.Skipf("no fixed directory for golden transcripts: %v", err)
	}
	dir := filepath.Join(base, name)
	unlock, err := fsutil.LockContext(t.Context(), dir+".lock")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		unlock()
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		unlock()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		os.RemoveAll(dir)
		unlock()
	})
	return dir
}
