// Package sqlitesession keeps session states in a table of an SQLite file
// (pure Go, modernc.org/sqlite). The file may be the one a
// workspace/sqlitestore uses: the tables do not overlap.
package sqlitesession

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/agentctx/agentctx/session"

	"github.com/agentctx/agentctx/internal/fsutil"
)

// Store is a session.Store in an SQLite file. It is safe for concurrent use
// by goroutines and processes: Save is one conditional UPDATE (or an INSERT
// that fails on an existing key), so compare-and-swap is the database's.
type Store struct {
	db     *sql.DB
	path   string
	closed atomic.Bool
}

var _ session.Store = (*Store)(nil)

const schema = `
CREATE TABLE IF NOT EXISTS sessions (
	ns      TEXT NOT NULL,
	id      TEXT NOT NULL,
	version INTEGER NOT NULL,
	updated INTEGER NOT NULL,
	data    BLOB NOT NULL,
	PRIMARY KEY (ns, id)
) WITHOUT ROWID;
`

// Open opens (creating it) the SQLite file at path and its sessions table.
func Open(ctx context.Context, path string) (*Store, error) {
	dsn := fmt.Sprintf("file:%s?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)",
		strings.NewReplacer("%", "%25", "?", "%3F", "#", "%23").Replace(path))
	if path != ":memory:" && path != "" {
		if err := fsutil.CreatePrivate(path); err != nil {
			return nil, fmt.Errorf("sqlitesession: open %s: %w", path, err)
		}
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlitesession: open %s: %w", path, err)
	}
	// Processes opening a new file at once may find it locked while one
	// of them sets it up (WAL mode): try again within the busy timeout.
	err = fsutil.RetryBusy(ctx, 10*time.Second, func() error {
		_, err := db.ExecContext(ctx, schema)
		return err
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlitesession: open %s: %w", path, err)
	}
	return &Store{db: db, path: path}, nil
}

// Path returns the SQLite file's path.
func (s *Store) Path() string { return s.path }

func (s *Store) begin(ctx context.Context, op, ns, id string) error {
	if err := session.Check(ctx, op, ns, id); err != nil {
		return err
	}
	if s.closed.Load() {
		return &session.Error{Op: op, Namespace: ns, ID: id, Err: session.ErrClosed}
	}
	return nil
}

// Load implements session.Store.
func (s *Store) Load(ctx context.Context, ns, id string) ([]byte, int64, error) {
	if err := s.begin(ctx, "load", ns, id); err != nil {
		return nil, 0, err
	}
	var data []byte
	var v int64
	err := s.db.QueryRowContext(ctx, `SELECT data, version FROM sessions WHERE ns = ? AND id = ?`, ns, id).Scan(&data, &v)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, 0, &session.Error{Op: "load", Namespace: ns, ID: id, Err: session.ErrNotFound}
	case err != nil:
		return nil, 0, &session.Error{Op: "load", Namespace: ns, ID: id, Err: err}
	}
	if data == nil {
		data = []byte{}
	}
	return data, v, nil
}

// Save implements session.Store.
func (s *Store) Save(ctx context.Context, ns, id string, data []byte, version int64) (int64, error) {
	if err := s.begin(ctx, "save", ns, id); err != nil {
		return 0, err
	}
	if data == nil {
		data = []byte{}
	}
	now := time.Now().UnixMilli()
	var (
		res sql.Result
		err error
	)
	if version == 0 {
		res, err = s.db.ExecContext(ctx, `INSERT INTO sessions (ns, id, version, updated, data) VALUES (?, ?, 1, ?, ?) ON CONFLICT DO NOTHING`, ns, id, now, data)
	} else {
		res, err = s.db.ExecContext(ctx, `UPDATE sessions SET version = version + 1, updated = ?, data = ? WHERE ns = ? AND id = ? AND version = ?`, now, data, ns, id, version)
	}
	if err != nil {
		return 0, &session.Error{Op: "save", Namespace: ns, ID: id, Err: err}
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return 0, &session.Error{Op: "save", Namespace: ns, ID: id, Err: session.ErrConflict}
	}
	return version + 1, nil
}

// Delete implements session.Store.
func (s *Store) Delete(ctx context.Context, ns, id string) error {
	if err := s.begin(ctx, "delete", ns, id); err != nil {
		return err
	}
	res, err := s.db.ExecContext(ctx, `DELETE FROM sessions WHERE ns = ? AND id = ?`, ns, id)
	if err != nil {
		return &session.Error{Op: "delete", Namespace: ns, ID: id, Err: err}
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return &session.Error{Op: "delete", Namespace: ns, ID: id, Err: session.ErrNotFound}
	}
	return nil
}

// Close implements session.Store.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	return s.db.Close()
}
