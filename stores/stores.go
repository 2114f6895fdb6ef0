// Package stores is the one place that chooses agentctx's stores when a
// program does not: package pipeline, package proxy and the agentctx
// command open their stores through Open, so that they follow the same
// rules.
//
// The rules:
//
//   - No workspace store given: a directory store (workspace/dirstore) at
//     Spec.Dir, DefaultDir when empty.
//
//   - No session store given: the one the workspace store keeps beside its
//     artifacts (session.Keeper), so the session state follows the
//     workspace. A SQLite workspace (workspace/sqlitestore) keeps its
//     sessions in the same file, a PostgreSQL one (workspace/pgstore) in the
//     same database, a directory one in its .sessions subdirectory, a
//     memory one (workspace/memstore) in the same memory. A workspace store
//     that keeps no session state is refused with ErrNoSessions: the state
//     is never kept in memory behind a program's back, where a second
//     process would start the session over.
//
//   - No workspace store needed (Spec.NoWorkspace) and none given: the
//     session state is kept in memory, for as long as the Stores.
//
//     st, err := stores.Open(ctx, stores.Spec{Workspace: sqliteStore})
//     ...
//     defer st.Close()
//     // st.Sessions keeps its state in the SQLite file of sqliteStore
//
// Open takes no location string: which backend a path or URL names
// (a directory, a SQLite file, a postgres:// URL) is for the program that
// reads it (the agentctx command), so that this package links only the
// directory and memory backends.
package stores

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentctx/agentctx/session"
	"github.com/agentctx/agentctx/session/memsession"
	"github.com/agentctx/agentctx/workspace"
	"github.com/agentctx/agentctx/workspace/dirstore"
)

// DefaultDir is the directory of the default workspace store.
const DefaultDir = ".agentctx"

// SessionsDir is the directory, inside a directory workspace, of the
// session state kept beside it.
const SessionsDir = dirstore.SessionsDir

// ErrNoSessions is returned by Open for a workspace store given without a
// session store when the workspace store keeps no session state (it does
// not implement session.Keeper, as a wrapper around a store may not): give
// Spec.Sessions (memsession.New() keeps the state in memory, deliberately).
var ErrNoSessions = errors.New("the workspace store keeps no session state (it does not implement session.Keeper): give a session store too")

// Spec says which stores to use. Its zero value means the defaults: a
// directory workspace at DefaultDir and its session state beside it.
type Spec struct {
	// Workspace is the workspace store; nil means a directory store at
	// Dir, opened by Open and closed by Stores.Close. A store given here
	// is never closed by Stores.Close.
	Workspace workspace.Store
	// Dir is the directory of the default workspace store; "" means
	// DefaultDir.
	Dir string
	// NoWorkspace says that no workspace store is needed: none is opened,
	// and the session state (unless given) is kept in memory. It is
	// ignored when Workspace is given.
	NoWorkspace bool

	// Sessions is the session store; nil means the one the workspace
	// store keeps (see the package doc). A store given here is never
	// closed by Stores.Close.
	Sessions session.Store
	// NoSessions says that no session state is kept (a stateless
	// pipeline): Stores.Sessions is nil.
	NoSessions bool
}

// Stores are the stores Open chose.
type Stores struct {
	// Workspace is the workspace store: nil only with Spec.NoWorkspace.
	Workspace workspace.Store
	// Sessions is the session store: nil only with Spec.NoSessions.
	Sessions session.Store

	closers []func() error // what Open opened, closed in reverse order
}

// Open returns the stores of a Spec by the rules of the package doc. ctx
// bounds the opening (a session table created in a database); the stores
// do not keep it. Close releases what Open opened.
func Open(ctx context.Context, spec Spec) (*Stores, error) {
	st := &Stores{Workspace: spec.Workspace, Sessions: spec.Sessions}
	if st.Workspace == nil && !spec.NoWorkspace {
		dir := spec.Dir
		if dir == "" {
			dir = DefaultDir
		}
		ws, err := dirstore.Open(dir, dirstore.Options{})
		if err != nil {
			return nil, fmt.Errorf("open workspace: %w", err)
		}
		st.Workspace = ws
		st.closers = append(st.closers, ws.Close)
	}
	if st.Sessions == nil && !spec.NoSessions {
		ss, err := sessionsOf(ctx, st.Workspace)
		if err != nil {
			st.Close()
			return nil, err
		}
		st.Sessions = ss
		st.closers = append(st.closers, ss.Close)
	}
	return st, nil
}

// sessionsOf returns the session store that follows ws.
func sessionsOf(ctx context.Context, ws workspace.Store) (session.Store, error) {
	if ws == nil {
		return memsession.New(), nil
	}
	k, ok := ws.(session.Keeper)
	if !ok {
		return nil, fmt.Errorf("open sessions: workspace store %T: %w", ws, ErrNoSessions)
	}
	ss, err := k.OpenSessions(ctx)
	if errors.Is(err, errors.ErrUnsupported) { // a portable store over a driver that keeps none
		return nil, fmt.Errorf("open sessions: %w: %w", ErrNoSessions, err)
	}
	if err != nil {
		return nil, fmt.Errorf("open sessions: %w", err)
	}
	return ss, nil
}

// Close closes the stores Open opened (the session store first), not the
// ones the Spec gave. It may be called again.
func (s *Stores) Close() error {
	var errs []error
	for i := len(s.closers) - 1; i >= 0; i-- {
		errs = append(errs, s.closers[i]())
	}
	s.closers = nil
	return errors.Join(errs...)
}
