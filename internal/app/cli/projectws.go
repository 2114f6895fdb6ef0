package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/agentctx/agentctx/internal/app/projectws"
)

// projectWorkspaceHelp is the help of --workspace for the commands whose
// default is the project's workspace (proxy, claude, codex, ws's reads,
// mcp, sessions).
const projectWorkspaceHelp = "workspace directory, or a SQLite file (.db, .sqlite, .sqlite3); default: the project's, ./" + projectws.LocalDir +
	" when it exists, else agentctx/projects/<dir>-<hash> in the user's state directory ($XDG_STATE_HOME, else ~/.local/state; macOS ~/Library/Application Support; Windows %LOCALAPPDATA%)"

// projectWorkspace returns the default workspace of the project the
// command runs in, the working directory (projectws.Default): every command
// that defaults to it finds the same one. The project's own .agentctx is
// returned as that relative name.
func (e *env) projectWorkspace() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("workspace: the current directory: %w", err)
	}
	project, err := projectws.Project(wd)
	if err != nil {
		return "", fmt.Errorf("workspace: the current directory: %w", err)
	}
	dir := projectws.Default(project, e.s.LookupEnv, runtime.GOOS)
	if dir == filepath.Join(project, projectws.LocalDir) {
		return projectws.LocalDir, nil
	}
	return dir, nil
}

// workspaceOr returns path, or the project's workspace when path is "".
func (e *env) workspaceOr(path string) (string, error) {
	if path != "" {
		return path, nil
	}
	return e.projectWorkspace()
}

// makeWorkspaceDir makes the directory of a directory workspace (a
// location that is neither a postgres:// URL nor a SQLite file) before a
// command that writes to it opens it, with the ignore file of ignoredDir.
// (The directory store makes its directory on its first write, where no
// ignore file would be written.)
func makeWorkspaceDir(loc string) error {
	if loc == "" || isPostgresURL(loc) || isSQLitePath(loc) {
		return nil
	}
	if err := checkWorkspacePath(loc); err != nil {
		return err
	}
	if fi, err := os.Stat(loc); err == nil && !fi.IsDir() {
		return nil // dirstore.Open's own error names it
	}
	if err := ignoredDir(loc); err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	return nil
}

// ignoredDir makes the directory dir when it does not exist and, when it
// was made inside a git work tree, writes the ignore file that keeps it
// out of version control (projectws.Ignore). A directory that exists is
// left as it is.
func ignoredDir(dir string) error {
	done := projectws.Creating(dir)
	if err := os.MkdirAll(dir, 0o700); err != nil { // private, as the stores keep theirs
		return err
	}
	return done()
}
