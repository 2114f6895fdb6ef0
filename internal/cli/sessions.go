package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/session"
	"github.com/agentctx/agentctx/session/pgsession"
	"github.com/agentctx/agentctx/session/sqlitesession"
)

// storeFlagHelp describes --store, which every command that keeps a
// workspace and session state takes.
const storeFlagHelp = "PostgreSQL URL (postgres://...) keeping the artifacts and session state, shared by every process that uses it; overrides --workspace"

// isPostgresURL reports whether a store location is a PostgreSQL URL.
func isPostgresURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// location returns where a command keeps its workspace and session state:
// the --store URL when given, else the --workspace path.
func location(store, workspace string) (string, error) {
	if store == "" {
		return workspace, nil
	}
	if !isPostgresURL(store) {
		return "", usagef("--store must be a postgres:// URL, got %q", store)
	}
	return store, nil
}

// openSessions opens the session-state store that goes with a workspace
// location: the sessions table of a PostgreSQL store, <dir>/.sessions for
// a directory, the sessions table of the same file for a SQLite workspace.
func openSessions(ctx context.Context, path string) (session.Store, error) {
	if isPostgresURL(path) {
		s, err := pgsession.Open(ctx, path, nil)
		if err != nil {
			return nil, fmt.Errorf("sessions: %w", err)
		}
		return s, nil
	}
	if !isSQLitePath(path) {
		s, err := session.OpenDir(filepath.Join(path, pipeline.SessionsDir))
		if err != nil {
			return nil, fmt.Errorf("sessions: %w", err)
		}
		return s, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("sessions: %w", err)
	}
	s, err := sqlitesession.Open(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("sessions: %w", err)
	}
	return s, nil
}
