// Package pgmigrate applies versioned schema migrations to a PostgreSQL
// database, so that the program creates and upgrades its own schema with
// no manual step.
//
// Applied migrations are recorded in the table agentctx_migrations, one
// row per (component, version). Apply runs in one transaction under an
// advisory lock: processes that start together against one database (a
// fleet of replicas) apply each migration exactly once, and a failed
// migration leaves the schema as it was.
package pgmigrate

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Migration is one step of a component's schema.
type Migration struct {
	Version int    // 1, 2, 3, ... in order, never reused
	Name    string // what it does, recorded with it
	SQL     string // one or more statements
}

// ErrTooNew is returned when the database holds migrations of a component
// that this program does not know: it was upgraded by a newer version.
var ErrTooNew = errors.New("database schema is newer than this program")

// Beginner is what Apply needs of a connection or a pool.
type Beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// lockKey is the advisory lock held while migrating (any constant).
const lockKey = 0x61676374_786d6967 // "agctxmig"

// Apply applies the migrations of component that the database lacks, in
// order, and returns the schema version afterwards.
func Apply(ctx context.Context, db Beginner, component string, ms []Migration) (int, error) {
	for i, m := range ms {
		if m.Version != i+1 {
			return 0, fmt.Errorf("pgmigrate: %s: migration %d has version %d", component, i+1, m.Version)
		}
	}
	tx, err := db.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("pgmigrate: %s: %w", component, err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(lockKey)); err != nil {
		return 0, fmt.Errorf("pgmigrate: %s: lock: %w", component, err)
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS agentctx_migrations (
		component  text NOT NULL,
		version    integer NOT NULL,
		name       text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now(),
		PRIMARY KEY (component, version))`); err != nil {
		return 0, fmt.Errorf("pgmigrate: %s: %w", component, err)
	}
	var have int
	if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM agentctx_migrations WHERE component = $1`, component).Scan(&have); err != nil {
		return 0, fmt.Errorf("pgmigrate: %s: %w", component, err)
	}
	if have > len(ms) {
		return have, fmt.Errorf("pgmigrate: %s: %w (version %d, this program knows %d)", component, ErrTooNew, have, len(ms))
	}
	for _, m := range ms[have:] {
		if _, err := tx.Exec(ctx, m.SQL); err != nil {
			return have, fmt.Errorf("pgmigrate: %s: migration %d (%s): %w", component, m.Version, m.Name, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO agentctx_migrations (component, version, name) VALUES ($1, $2, $3)`,
			component, m.Version, m.Name); err != nil {
			return have, fmt.Errorf("pgmigrate: %s: %w", component, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return have, fmt.Errorf("pgmigrate: %s: %w", component, err)
	}
	return len(ms), nil
}
