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
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/agentctx/agentctx/session"

	"github.com/agentctx/agentctx/internal/base/fsutil"
)

// driver is the session.Driver of a table in an SQLite file. It is safe for
// concurrent use by goroutines and processes: Save is one conditional
// UPDATE (or an INSERT that fails on an existing key), so compare-and-swap
// is the database's.
type driver struct {
	db    *sql.DB
	ownDB bool // Close closes db
}

var _ session.Driver = (*driver)(nil)

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
func Open(ctx context.Context, path string) (session.Store, error) {
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
	if err := createTable(ctx, db, path); err != nil {
		db.Close()
		return nil, err
	}
	return session.New(&driver{db: db, ownDB: true}, session.Options{}), nil
}

// New returns a store over a database another store opened (the SQLite
// file of a workspace/sqlitestore: its OpenSessions calls New), creating
// the sessions table when needed. Close leaves db open: its owner closes
// it, after this store. path is what Path reports.
func New(ctx context.Context, db *sql.DB, path string) (session.Store, error) {
	if err := createTable(ctx, db, path); err != nil {
		return nil, err
	}
	return session.New(&driver{db: db}, session.Options{}), nil
}

func createTable(ctx context.Context, db *sql.DB, path string) error {
	// Processes opening a new file at once may find it locked while one
	// of them sets it up (WAL mode): try again within the busy timeout.
	err := fsutil.RetryBusy(ctx, 10*time.Second, func() error {
		_, err := db.ExecContext(ctx, schema+ledgerSchema)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlitesession: open %s: %w", path, err)
	}
	return nil
}

// Load implements session.Driver.
func (s *driver) Load(ctx context.Context, ns, id string) ([]byte, int64, error) {
	var data []byte
	var v int64
	err := s.db.QueryRowContext(ctx, `SELECT data, version FROM sessions WHERE ns = ? AND id = ?`, ns, id).Scan(&data, &v)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, 0, session.ErrNotFound
	case err != nil:
		return nil, 0, err
	}
	if data == nil {
		data = []byte{}
	}
	return data, v, nil
}

// Save implements session.Driver.
func (s *driver) Save(ctx context.Context, ns, id string, data []byte, version int64) (int64, error) {
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
		return 0, err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return 0, session.ErrConflict
	}
	return version + 1, nil
}

// Delete implements session.Driver.
func (s *driver) Delete(ctx context.Context, ns, id string) error {
	res, err := s.db.ExecContext(ctx, `DELETE FROM sessions WHERE ns = ? AND id = ?`, ns, id)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return session.ErrNotFound
	}
	return nil
}

// DeleteVersion implements session.Driver.
func (s *driver) DeleteVersion(ctx context.Context, ns, id string, version int64) error {
	res, err := s.db.ExecContext(ctx, `DELETE FROM sessions WHERE ns = ? AND id = ? AND version = ?`, ns, id, version)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return nil
	}
	if _, err := s.Stat(ctx, ns, id); err != nil {
		return err
	}
	return session.ErrConflict
}

// Stat implements session.Driver.
func (s *driver) Stat(ctx context.Context, ns, id string) (session.Info, error) {
	in := session.Info{Namespace: ns, ID: id}
	var updated int64
	err := s.db.QueryRowContext(ctx, `SELECT version, length(CAST(data AS BLOB)), updated FROM sessions WHERE ns = ? AND id = ?`, ns, id).Scan(&in.Version, &in.Size, &updated)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return session.Info{}, session.ErrNotFound
	case err != nil:
		return session.Info{}, err
	}
	in.Updated = time.UnixMilli(updated)
	return in, nil
}

// List implements session.Driver.
func (s *driver) List(ctx context.Context, ns string) ([]session.Info, error) {
	fail := func(err error) ([]session.Info, error) { return nil, err }
	rows, err := s.db.QueryContext(ctx, `SELECT ns, id, version, length(CAST(data AS BLOB)), updated FROM sessions WHERE ? = '' OR ns = ?`, ns, ns)
	if err != nil {
		return fail(err)
	}
	defer rows.Close()
	var out []session.Info
	for rows.Next() {
		var in session.Info
		var updated int64
		if err := rows.Scan(&in.Namespace, &in.ID, &in.Version, &in.Size, &updated); err != nil {
			return fail(err)
		}
		in.Updated = time.UnixMilli(updated)
		out = append(out, in)
	}
	if err := rows.Err(); err != nil {
		return fail(err)
	}
	return out, nil
}

// Close implements session.Driver.
func (s *driver) Close() error {
	if !s.ownDB {
		return nil
	}
	return s.db.Close()
}
