package cli_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// What agentctx stores (tool output, session state, archives) is readable
// by its owner only: files 0600, directories 0700, for the directory and
// SQLite workspaces (issue 24: they were world-readable).
func TestWorkspaceIsPrivate(t *testing.T) {
	dir := t.TempDir()
	example, _ := filepath.Abs("../../../examples/session.json")
	for _, ws := range []string{filepath.Join(dir, "ws"), filepath.Join(dir, "ws.db")} {
		code, _, errOut := runCLI(t, "", "prepare", "--workspace", ws, "--dir", filepath.Join(dir, "off"), "--limit", "14000", "--summary", "never", example)
		if code != 0 {
			t.Fatalf("prepare: exit %d: %s", code, errOut)
		}
	}
	n := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		fi, err := os.Lstat(path)
		if err != nil {
			return err
		}
		if fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s is %v: readable by others", path, fi.Mode().Perm())
		}
		n++
		return nil
	})
	if err != nil || n < 50 {
		t.Fatalf("walked %d files: %v", n, err)
	}
}
