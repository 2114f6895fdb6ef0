package projectws_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentctx/agentctx/internal/app/projectws"
)

func env(kv ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestStateHome(t *testing.T) {
	for _, c := range []struct {
		name, goos string
		env        func(string) (string, bool)
		want       string // "" means none
	}{
		{"linux XDG", "linux", env("XDG_STATE_HOME", "/x/state", "HOME", "/home/u"), "/x/state"},
		{"linux relative XDG is ignored", "linux", env("XDG_STATE_HOME", "state", "HOME", "/home/u"), "/home/u/.local/state"},
		{"linux HOME", "linux", env("HOME", "/home/u"), "/home/u/.local/state"},
		{"freebsd HOME", "freebsd", env("HOME", "/home/u"), "/home/u/.local/state"},
		{"linux nothing", "linux", env(), ""},
		{"linux relative HOME", "linux", env("HOME", "u"), ""},
		{"nil environment", "linux", nil, ""},
		{"darwin", "darwin", env("HOME", "/Users/u"), "/Users/u/Library/Application Support"},
		{"darwin XDG wins", "darwin", env("HOME", "/Users/u", "XDG_STATE_HOME", "/s"), "/s"},
		{"windows LOCALAPPDATA", "windows", env("LOCALAPPDATA", `C:\Users\u\AppData\Local`, "USERPROFILE", `C:\Users\u`), `C:\Users\u\AppData\Local`},
		{"windows USERPROFILE", "windows", env("USERPROFILE", `C:\Users\u`), `C:\Users\u\AppData\Local`},
		{"windows HOME is not used", "windows", env("HOME", "/home/u"), ""},
	} {
		got, ok := projectws.StateHome(c.env, c.goos)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("%s: StateHome = %q, %v; want %q", c.name, got, ok, c.want)
		}
	}
}

func TestFolder(t *testing.T) {
	for _, c := range []struct{ project, want string }{
		{"/home/u/src/agentctx", "agentctx-"},
		{"/home/u/my project (copy)", "my_project__copy_-"},
		{"/", "root-"},
		{"/srv/..hidden", "hidden-"},
		{"/a/ünïcode", "_n_code-"},
	} {
		got := projectws.Folder(c.project)
		if len(got) != len(c.want)+12 || got[:len(c.want)] != c.want {
			t.Errorf("Folder(%q) = %q, want %q and 12 hex digits", c.project, got, c.want)
		}
	}
	if a, b := projectws.Folder("/x/app"), projectws.Folder("/y/app"); a == b {
		t.Errorf("two projects of one name share the folder %s", a)
	}
	if a, b := projectws.Folder("/x/app"), projectws.Folder("/x/app"); a != b {
		t.Errorf("one project has two folders: %s, %s", a, b)
	}
}

func TestDefault(t *testing.T) {
	state := t.TempDir()
	lookup := env("XDG_STATE_HOME", state)
	project := t.TempDir()
	want := filepath.Join(state, "agentctx", "projects", projectws.Folder(project))
	if got := projectws.Default(project, lookup, "linux"); got != want {
		t.Errorf("Default without .agentctx = %s, want %s", got, want)
	}
	if got := projectws.Default(project, env(), "linux"); got != filepath.Join(project, ".agentctx") {
		t.Errorf("Default without a state directory = %s, want the project's .agentctx", got)
	}
	if err := os.Mkdir(filepath.Join(project, ".agentctx"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := projectws.Default(project, lookup, "linux"); got != filepath.Join(project, ".agentctx") {
		t.Errorf("Default with .agentctx = %s, want it", got)
	}
}

func TestIgnore(t *testing.T) {
	repo := t.TempDir()
	if err := os.Mkdir(filepath.Join(repo, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	for _, c := range []struct {
		name     string
		dir      string
		existed  bool // the directory was there before: the user's
		wantFile bool
	}{
		{"created in a work tree", filepath.Join(repo, ".agentctx"), false, true},
		{"created deep in a work tree", filepath.Join(repo, "a", "b", "ws"), false, true},
		{"the user's directory", filepath.Join(repo, "mine"), true, false},
		{"outside a work tree", filepath.Join(outside, "ws"), false, false},
	} {
		if c.existed {
			if err := os.MkdirAll(c.dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		done := projectws.Creating(c.dir)
		if err := os.MkdirAll(c.dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := done(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		b, err := os.ReadFile(filepath.Join(c.dir, ".gitignore"))
		if c.wantFile != (err == nil) || c.wantFile && string(b) != projectws.IgnoreContent {
			t.Errorf("%s: .gitignore %q, %v; want it: %v", c.name, b, err, c.wantFile)
		}
	}
	// An ignore file already there is kept as it is.
	dir := filepath.Join(repo, "kept")
	done := projectws.Creating(dir)
	os.Mkdir(dir, 0o755)
	os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("mine\n"), 0o644)
	if err := done(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, ".gitignore")); string(b) != "mine\n" {
		t.Errorf("an existing .gitignore became %q", b)
	}
}
