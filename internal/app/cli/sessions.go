package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentctx/agentctx/session"
	"github.com/agentctx/agentctx/stores"
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
// location: the one its workspace store keeps (package stores' rule: the
// sessions table of the same PostgreSQL database or SQLite file,
// <dir>/.sessions of a directory). Its Close closes the workspace store it
// opened for that.
func openSessions(ctx context.Context, path string) (session.Store, error) {
	ws, err := openStore(ctx, path)
	if err != nil {
		return nil, err // the workspace's error, which names it
	}
	st, err := stores.Open(ctx, stores.Spec{Workspace: ws})
	if err != nil {
		ws.Close()
		return nil, fmt.Errorf("sessions: %w", err)
	}
	return keptSessions{st.Sessions, func() error { return errors.Join(st.Close(), ws.Close()) }}, nil
}

// keptSessions is a session store whose Close also closes the workspace
// store that keeps it.
type keptSessions struct {
	session.Store
	close func() error
}

func (k keptSessions) Close() error { return k.close() }

// Unwrap returns the store it wraps (session.LedgerOf reads its ledger).
func (k keptSessions) Unwrap() session.Store { return k.Store }
