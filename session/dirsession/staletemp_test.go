package dirsession_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentctx/agentctx/internal/base/fsutil"
	"github.com/agentctx/agentctx/session/dirsession"
)

// A Save killed between writing its temp file and renaming it leaves the
// temp file behind: Open removes those of its own naming once they are
// older than fsutil.StaleAge, and leaves sessions, recent temp files (a
// Save of another process in progress) and other files alone (issue 49).
func TestOpenRemovesStaleTempFiles(t *testing.T) {
	root := t.TempDir()
	ctx := t.Context()
	s, err := dirsession.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Save(ctx, "ns", "sess", []byte("state"), 0); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(root)
	if err != nil || len(ents) != 1 || !ents[0].IsDir() {
		t.Fatalf("root holds %v, %v: want one namespace directory", ents, err)
	}
	nsDir := filepath.Join(root, ents[0].Name())
	old := time.Now().Add(-2 * fsutil.StaleAge)
	tests := []struct {
		name  string
		dir   string
		mtime time.Time
		kept  bool
	}{
		{fsutil.TempPrefix + "123456", nsDir, old, false},
		{fsutil.TempPrefix + "98765", root, old, false},
		{fsutil.TempPrefix + "555", nsDir, time.Now(), true}, // a Save in progress
		{fsutil.TempPrefix + "notmine", nsDir, old, true},    // not a name fsutil makes
		{"notes.txt", nsDir, old, true},                      // not a temp file
	}
	for _, tt := range tests {
		p := filepath.Join(tt.dir, tt.name)
		if err := os.WriteFile(p, []byte("partial"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, tt.mtime, tt.mtime); err != nil {
			t.Fatal(err)
		}
	}
	s2, err := dirsession.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		_, err := os.Stat(filepath.Join(tt.dir, tt.name))
		if kept := err == nil; kept != tt.kept {
			t.Errorf("%s: kept %v, want %v (%v)", tt.name, kept, tt.kept, err)
		} else if !tt.kept && !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: %v", tt.name, err)
		}
	}
	if data, _, err := s2.Load(ctx, "ns", "sess"); err != nil || string(data) != "state" {
		t.Errorf("the session after Open: %q, %v", data, err)
	}
}
