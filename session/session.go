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
// Backends: MemStore (memory), DirStore (a directory, one JSON file per
// session, the default beside a directory workspace) and
// session/sqlitesession (a table in an SQLite file). Every backend passes the
// conformance suite in session/sessiontest.
package session

import (
	"context"
	"errors"
	"strconv"
	"unicode/utf8"
)

// Store keeps versioned session states.
//
// Contract, checked for every backend by sessiontest.Run:
//
//   - Safe for concurrent use by many goroutines (and, for DirStore and
//     sqlitesession, by many processes).
//   - Every method checks ctx first: with a cancelled ctx it returns an
//     error matching ctx.Err() and changes nothing.
//   - Load returns the stored bytes and their version; a session never
//     saved is ErrNotFound. Versions start at 1 and grow by one per Save.
//   - Save(ctx, ns, id, data, version) stores data only if the stored
//     version is version (0: nothing stored yet), and returns the new
//     version. Otherwise nothing changes and the error matches
//     ErrConflict: the caller loads again, redoes its work and retries.
//   - Delete removes a session; deleting a missing one is ErrNotFound.
//   - Namespaces and ids are non-empty valid UTF-8 (any bytes otherwise:
//     "/", "..", NUL); two different ids are two sessions. A bad one is
//     ErrInvalidKey.
//   - Data is kept byte for byte; callers may modify what Load returns.
//   - After Close, methods fail with ErrClosed; Close may be called again.
type Store interface {
	Load(ctx context.Context, namespace, id string) (data []byte, version int64, err error)
	Save(ctx context.Context, namespace, id string, data []byte, version int64) (int64, error)
	Delete(ctx context.Context, namespace, id string) error
	Close() error
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
	Op        string // "load", "save", "delete"
	Namespace string
	ID        string
	Err       error
}

func (e *Error) Error() string {
	return "session: " + e.Op + " " + strconv.Quote(e.ID) + " in namespace " + strconv.Quote(e.Namespace) + ": " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Check validates the context and the key of an operation and wraps a
// failure in an *Error. Backends call it first in every method.
func Check(ctx context.Context, op, namespace, id string) error {
	if err := ctx.Err(); err != nil {
		return &Error{Op: op, Namespace: namespace, ID: id, Err: err}
	}
	if namespace == "" || id == "" || !utf8.ValidString(namespace) || !utf8.ValidString(id) {
		return &Error{Op: op, Namespace: namespace, ID: id, Err: ErrInvalidKey}
	}
	return nil
}
