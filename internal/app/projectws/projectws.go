// Package projectws chooses where the agentctx command keeps the workspace
// of a project when no --workspace names one, and keeps the workspace
// directories it creates inside a git work tree out of version control.
//
// The rule (Default): a project is the directory a command runs in. Its
// workspace is <project>/.agentctx when that exists (the single-shot
// commands, prepare and ws offload, keep theirs there, as earlier versions
// of the live commands did); otherwise it is outside the project, in the
// user's state directory (StateHome):
//
//	<state>/agentctx/projects/<name>-<hash>
//
// where name is the project directory's base name with every character
// but letters, digits, '.', '_' and '-' replaced by '_' (at most 40
// bytes), and hash the first 12 hex digits of the SHA-256 of its absolute
// path: one folder per project path, readable in a listing.
//
// Every function takes the environment as a lookup function and the
// operating system as a string, so that the rule is tested without the
// process's environment.
package projectws

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// LocalDir is the name of a workspace directory kept inside the project.
const LocalDir = ".agentctx"

// IgnoreFile is the name of the file Ignore writes, and IgnoreContent what
// it holds: every file of the directory, itself included, is ignored.
const (
	IgnoreFile    = ".gitignore"
	IgnoreContent = "# written by agentctx: a workspace holds whole tool outputs (secrets too); keep it out of version control\n*\n"
)

// StateHome returns the user's state directory, by the first rule that
// applies:
//
//   - $XDG_STATE_HOME, when it is an absolute path (on every system);
//   - on macOS (goos "darwin"): $HOME/Library/Application Support;
//   - on Windows: %LOCALAPPDATA%, else %USERPROFILE%\AppData\Local;
//   - elsewhere: $HOME/.local/state (the XDG default).
//
// ok is false when the variables it needs are unset or not absolute.
func StateHome(lookup func(string) (string, bool), goos string) (dir string, ok bool) {
	get := func(k string) string {
		if lookup == nil {
			return ""
		}
		v, _ := lookup(k)
		return v
	}
	abs := func(p string) bool { return p != "" && (filepath.IsAbs(p) || goos == "windows" && isWindowsAbs(p)) }
	if d := get("XDG_STATE_HOME"); abs(d) {
		return d, true
	}
	switch goos {
	case "windows":
		if d := get("LOCALAPPDATA"); abs(d) {
			return d, true
		}
		if d := get("USERPROFILE"); abs(d) {
			return d + `\AppData\Local`, true
		}
		return "", false
	case "darwin", "ios":
		if h := get("HOME"); abs(h) {
			return filepath.Join(h, "Library", "Application Support"), true
		}
		return "", false
	}
	if h := get("HOME"); abs(h) {
		return filepath.Join(h, ".local", "state"), true
	}
	return "", false
}

// isWindowsAbs reports whether p is an absolute Windows path (C:\... or
// \\server\...), whatever system reads it.
func isWindowsAbs(p string) bool {
	return len(p) >= 3 && p[1] == ':' && (p[2] == '\\' || p[2] == '/') || strings.HasPrefix(p, `\\`)
}

// Folder returns the name of a project's folder under
// <state>/agentctx/projects: the sanitised base name of project and a
// short hash of project, which should be absolute and clean.
func Folder(project string) string {
	sum := sha256.Sum256([]byte(project))
	base := filepath.Base(project)
	if base == string(filepath.Separator) || base == "." {
		base = "" // a root: named "root"
	}
	var b strings.Builder
	for _, r := range base {
		if b.Len() >= 40 {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	name := strings.Trim(b.String(), ".")
	if name == "" {
		name = "root"
	}
	return name + "-" + hex.EncodeToString(sum[:6])
}

// StateDir returns the workspace of project in the user's state directory
// (see the package doc); ok is false when there is no state directory.
func StateDir(project string, lookup func(string) (string, bool), goos string) (string, bool) {
	home, ok := StateHome(lookup, goos)
	if !ok {
		return "", false
	}
	return filepath.Join(home, "agentctx", "projects", Folder(project)), true
}

// Default returns the default workspace of the project at project (an
// absolute path): project/.agentctx when it exists, else the project's
// folder in the state directory, else (no state directory: no HOME)
// project/.agentctx.
func Default(project string, lookup func(string) (string, bool), goos string) string {
	local := filepath.Join(project, LocalDir)
	if _, err := os.Lstat(local); err == nil {
		return local
	}
	if dir, ok := StateDir(project, lookup, goos); ok {
		return dir
	}
	return local
}

// Project returns the project of a command run in the working directory
// dir: its absolute path, symbolic links resolved when they can be, so
// that one project has one folder whatever path led to it.
func Project(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real, nil
	}
	return abs, nil
}

// InGitWorkTree reports whether dir (which need not exist) is inside a git
// work tree: whether it or one of its parents holds a .git entry (a
// directory, or the file of a linked work tree or submodule).
func InGitWorkTree(dir string) bool {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return false
	}
	for d := abs; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return true
		}
		if filepath.Dir(d) == d {
			return false
		}
	}
}

// Ignore writes IgnoreFile into dir, a directory agentctx created, when
// dir is inside a git work tree and holds no such file yet, so that git
// status and git add never see what the directory holds. It changes
// nothing elsewhere, and nothing when the file exists.
func Ignore(dir string) error {
	if !InGitWorkTree(dir) {
		return nil
	}
	f, err := os.OpenFile(filepath.Join(dir, IgnoreFile), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if _, err := f.WriteString(IgnoreContent); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Creating returns a function to call once a directory has been made: it
// runs Ignore on dir when dir did not exist when Creating was called (the
// command created it), and does nothing otherwise, so that a directory the
// user made keeps whatever it holds.
func Creating(dir string) func() error {
	if _, err := os.Lstat(dir); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return func() error { return nil }
	}
	return func() error {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			return nil // not made, or not a directory (a SQLite file)
		}
		return Ignore(dir)
	}
}
