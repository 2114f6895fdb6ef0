package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/session"
	"github.com/agentctx/agentctx/session/sqlitesession"
)

// openSessions opens the session-state store that goes with the workspace
// named by --workspace: <dir>/.sessions for a directory, the sessions table
// of the same file for a SQLite workspace.
func openSessions(ctx context.Context, path string) (session.Store, error) {
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
