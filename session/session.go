// Package session keeps the state of live conversations between requests
// and between processes: what the pipeline decided for a conversation (which
// tool results were pruned or offloaded, the compaction, the provider's
// reported usage), so that every later request re-applies the same
// decisions byte for byte and a provider's prompt cache stays valid.
//
// The state itself is opaque to this package: a Store keeps one versioned
// byte string per (namespace, session id) and updates it with
// compare-and-swap, so two processes preparing requests of one session
// never lose an update. Package pipeline defines what the bytes hold.
//
// Backends, one subpackage each: session/memsession (memory),
// session/dirsession (a directory, one file per session, the default beside
// a directory workspace), session/sqlitesession (a table in an SQLite file)
// and session/pgsession (PostgreSQL, shared by a fleet). Every backend
// passes the conformance suite in session/sessiontest.
//
// The session state follows the workspace: a workspace store that keeps
// session state beside its artifacts implements Keeper (a SQLite workspace
// in the same file, a PostgreSQL one in the same database, a directory one
// in its .sessions subdirectory, a memory one in the same memory), and
// package stores opens it when no session store is given. Stat, List and DeleteVersion let housekeeping
// (pipeline.Sessions: "agentctx sessions") list sessions and delete only
// what it judged idle.
package session

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"
)

// Store keeps versioned session states.
//
// Contract, checked for every backend by sessiontest.Run. A backend is a
// Driver (the I/O) under the portable Store New makes of it, which keeps
// the checks, errors, Close and deadlines of this contract for every
// backend alike:
//
//   - Safe for concurrent use by many goroutines (and, for dirsession,
//     sqlitesession and pgsession, by many processes).
//   - Every method checks ctx first: with a cancelled ctx it returns an
//     error matching ctx.Err() and changes nothing.
//   - Load returns the stored bytes and their version; a session never
//     saved is ErrNotFound. Versions start at 1 and grow by one per Save.
//   - Save(ctx, ns, id, data, version) stores data only if the stored
//     version is version (0: nothing stored yet), and returns the new
//     version. Otherwise nothing changes and the error matches
//     ErrConflict: the caller loads again, redoes its work and retries.
//   - Delete removes a session; deleting a missing one is ErrNotFound.
//     DeleteVersion removes it only if its stored version is still
//     version, else it changes nothing and the error matches ErrConflict
//     (ErrNotFound when it is gone): retention deletes only the state it
//     judged, never one saved since.
//   - Stat describes a session without its data: version, data size and
//     the time of its last Save (the store's clock; for dirsession the
//     file's modification time). A missing session is ErrNotFound.
//   - List describes the sessions of a namespace, or of every namespace
//     when namespace is "", ordered by namespace then id (byte order).
//     A listing is a snapshot of each session it names: a session saved
//     or deleted during it may or may not appear.
//   - Namespaces and ids are non-empty valid UTF-8 (any bytes otherwise:
//     "/", "..", NUL); two different ids are two sessions. A bad one is
//     ErrInvalidKey.
//   - Data is kept byte for byte; callers may modify what Load returns.
//   - After Close, methods fail with ErrClosed; Close may be called again.
type Store interface {
	Load(ctx context.Context, namespace, id string) (data []byte, version int64, err error)
	Save(ctx context.Context, namespace, id string, data []byte, version int64) (int64, error)
	Delete(ctx context.Context, namespace, id string) error
	DeleteVersion(ctx context.Context, namespace, id string, version int64) error
	Stat(ctx context.Context, namespace, id string) (Info, error)
	List(ctx context.Context, namespace string) ([]Info, error)
	Close() error
}

// Keeper is a store of another kind, a workspace store, that keeps session
// state beside its own data. Package stores (and so pipeline and proxy)
// opens it when a workspace store is given without a session store, so
// that the state is kept wherever the artifacts are.
type Keeper interface {
	// OpenSessions opens the session store kept with the store's data.
	// The caller closes it, before it closes the store that opened it.
	OpenSessions(ctx context.Context) (Store, error)
}

// Info describes a stored session without its data.
type Info struct {
	Namespace string    `json:"namespace"`
	ID        string    `json:"id"`
	Version   int64     `json:"version"`
	Size      int64     `json:"size"`    // bytes of data
	Updated   time.Time `json:"updated"` // when the last Save stored it
}

// Sentinel errors for errors.Is.
var (
	ErrNotFound   = errors.New("session not found")
	ErrConflict   = errors.New("session changed since it was loaded")
	ErrInvalidKey = errors.New("invalid session key: want non-empty UTF-8 namespace and id")
	ErrClosed     = errors.New("session store is closed")
)

// Error is the error a Store returns: the operation, the key and the cause.
type Error struct {
	Op        string // "load", "save", "delete", "stat", "list", "ledger append", "ledger query"
	Namespace string
	ID        string
	Err       error
}

func (e *Error) Error() string {
	s := "session: " + e.Op
	keyless := e.Op == "list" || strings.HasPrefix(e.Op, "ledger ") // calls of no session
	if e.ID != "" || !keyless {
		s += " " + strconv.Quote(e.ID)
	}
	if e.Namespace != "" || !keyless {
		s += " in namespace " + strconv.Quote(e.Namespace)
	}
	return s + ": " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }
