// Package pgsession keeps session states in a PostgreSQL database that a
// fleet of processes shares (github.com/jackc/pgx/v5): a request of session
// S may be prepared by any replica, and two replicas racing on S never lose
// an update, because Save is a compare-and-swap on a version column done by
// the database (one conditional UPDATE, or an INSERT that does nothing when
// the session exists).
//
// Open creates and migrates its table by itself (internal/base/pgmigrate,
// component "session"); the database may be the one a workspace/pgstore
// uses: the tables do not overlap.
package pgsession

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentctx/agentctx/internal/base/pgmigrate"
	"github.com/agentctx/agentctx/internal/base/secret"
	"github.com/agentctx/agentctx/session"
)

// Component is the name of the session schema in agentctx_migrations.
const Component = "session"

var migrations = []pgmigrate.Migration{
	{Version: 1, Name: "sessions", SQL: `
CREATE TABLE agentctx_sessions (
	ns      bytea NOT NULL,
	id      bytea NOT NULL,
	version bigint NOT NULL,
	updated timestamptz NOT NULL DEFAULT now(),
	data    bytea NOT NULL,
	PRIMARY KEY (ns, id)
);`},
	ledgerMigration, // ledger.go
}

// Options configure a Store. The zero value is the default.
type Options struct {
	// MaxConns caps the connections to the server; 0 means pgxpool's
	// default.
	MaxConns int32
}

// driver is the session.Driver of a table in a PostgreSQL database, safe
// for concurrent use by goroutines and processes.
type driver struct {
	pool    *pgxpool.Pool
	ownPool bool // Close closes pool
}

var _ session.Driver = (*driver)(nil)

// Open connects to the database at url (postgres://...), creating or
// migrating the sessions table when needed. The zero Options means the
// documented defaults.
func Open(ctx context.Context, dbURL string, opts Options) (session.Store, error) {
	loc := secret.URL(dbURL)
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return nil, fmt.Errorf("pgsession: open %s: %w", loc, err)
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgsession: open %s: %w", loc, err)
	}
	if _, err := pgmigrate.Apply(ctx, pool, Component, migrations); err != nil {
		pool.Close()
		return nil, fmt.Errorf("pgsession: open %s: %w", loc, err)
	}
	return session.New(&driver{pool: pool, ownPool: true}, session.Options{}), nil
}

// New returns a store over a pool another store opened (the database of a
// workspace/pgstore: its OpenSessions calls New), creating or migrating the
// sessions table when needed. Close leaves the pool open: its owner closes
// it, after this store. loc is what Location reports: a URL without its
// password.
func New(ctx context.Context, pool *pgxpool.Pool, loc string) (session.Store, error) {
	if _, err := pgmigrate.Apply(ctx, pool, Component, migrations); err != nil {
		return nil, fmt.Errorf("pgsession: open %s: %w", loc, err)
	}
	return session.New(&driver{pool: pool}, session.Options{}), nil
}

// Load implements session.Driver.
func (s *driver) Load(ctx context.Context, ns, id string) ([]byte, int64, error) {
	var (
		data []byte
		v    int64
	)
	err := s.pool.QueryRow(ctx, `SELECT data, version FROM agentctx_sessions WHERE ns = $1 AND id = $2`,
		[]byte(ns), []byte(id)).Scan(&data, &v)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, 0, session.ErrNotFound
	case err != nil:
		return nil, 0, err
	}
	if data == nil {
		data = []byte{}
	}
	return data, v, nil
}

// Save implements session.Driver: version 0 inserts, any other version
// updates only the row that still has it.
func (s *driver) Save(ctx context.Context, ns, id string, data []byte, version int64) (int64, error) {
	if data == nil {
		data = []byte{}
	}
	var (
		sql  string
		args []any
	)
	if version == 0 {
		sql = `INSERT INTO agentctx_sessions (ns, id, version, data) VALUES ($1, $2, 1, $3) ON CONFLICT DO NOTHING`
		args = []any{[]byte(ns), []byte(id), data}
	} else {
		sql = `UPDATE agentctx_sessions SET version = version + 1, updated = now(), data = $3
			WHERE ns = $1 AND id = $2 AND version = $4`
		args = []any{[]byte(ns), []byte(id), data, version}
	}
	tag, err := s.pool.Exec(ctx, sql, args...)
	if err != nil {
		return 0, err
	}
	if tag.RowsAffected() != 1 {
		return 0, session.ErrConflict
	}
	return version + 1, nil
}

// Delete implements session.Driver.
func (s *driver) Delete(ctx context.Context, ns, id string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM agentctx_sessions WHERE ns = $1 AND id = $2`, []byte(ns), []byte(id))
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return session.ErrNotFound
	}
	return nil
}

// DeleteVersion implements session.Driver.
func (s *driver) DeleteVersion(ctx context.Context, ns, id string, version int64) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM agentctx_sessions WHERE ns = $1 AND id = $2 AND version = $3`, []byte(ns), []byte(id), version)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 1 {
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
	err := s.pool.QueryRow(ctx, `SELECT version, octet_length(data), updated FROM agentctx_sessions WHERE ns = $1 AND id = $2`,
		[]byte(ns), []byte(id)).Scan(&in.Version, &in.Size, &in.Updated)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return session.Info{}, session.ErrNotFound
	case err != nil:
		return session.Info{}, err
	}
	return in, nil
}

// List implements session.Driver.
func (s *driver) List(ctx context.Context, ns string) ([]session.Info, error) {
	rows, err := s.pool.Query(ctx, `SELECT ns, id, version, octet_length(data), updated FROM agentctx_sessions
		WHERE $1 = ''::bytea OR ns = $1 ORDER BY ns, id`, []byte(ns))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []session.Info
	for rows.Next() {
		var in session.Info
		var space, id []byte
		if err := rows.Scan(&space, &id, &in.Version, &in.Size, &in.Updated); err != nil {
			return nil, err
		}
		in.Namespace, in.ID = string(space), string(id)
		out = append(out, in)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// Close implements session.Driver: it closes the connections.
func (s *driver) Close() error {
	if !s.ownPool {
		return nil
	}
	s.pool.Close()
	return nil
}
