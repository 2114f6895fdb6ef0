package sqlitesession

import (
	"context"
	"strings"
	"time"

	"github.com/agentctx/agentctx/session"
)

// ledgerSchema is the table of the session.Ledger, created with the
// sessions table.
const ledgerSchema = `
CREATE TABLE IF NOT EXISTS ledger (
	seq         INTEGER PRIMARY KEY AUTOINCREMENT,
	at          INTEGER NOT NULL,
	session     TEXT NOT NULL,
	ns          TEXT NOT NULL,
	api         TEXT NOT NULL,
	model       TEXT NOT NULL,
	client      TEXT NOT NULL,
	project     TEXT NOT NULL,
	input       INTEGER NOT NULL,
	cache_read  INTEGER NOT NULL,
	cache_write INTEGER NOT NULL,
	output      INTEGER NOT NULL,
	cost        REAL NOT NULL,
	cost_without REAL NOT NULL,
	compacted   INTEGER NOT NULL,
	edited      INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS ledger_at ON ledger (at);
CREATE INDEX IF NOT EXISTS ledger_session ON ledger (session, at);
`

var _ session.LedgerDriver = (*driver)(nil)

// AppendLedger implements session.LedgerDriver: one transaction.
func (s *driver) AppendLedger(ctx context.Context, entries []session.LedgerEntry) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, e := range entries {
		if _, err := tx.ExecContext(ctx, `INSERT INTO ledger (at, session, ns, api, model, client, project, input, cache_read, cache_write, output, cost, cost_without, compacted, edited)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			e.Time.UnixMilli(), e.Session, e.Namespace, e.API, e.Model, e.Client, e.Project,
			e.InputTokens, e.CacheReadTokens, e.CacheWriteTokens, e.OutputTokens, e.CostUSD, e.CostWithoutUSD,
			e.Compacted, e.Edited); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// ScanLedger implements session.LedgerDriver, in the order of Append.
func (s *driver) ScanLedger(ctx context.Context, f session.LedgerFilter, fn func(session.LedgerEntry) error) error {
	var where []string
	var args []any
	if !f.Since.IsZero() {
		where, args = append(where, "at >= ?"), append(args, f.Since.UnixMilli())
	}
	if !f.Until.IsZero() {
		where, args = append(where, "at < ?"), append(args, f.Until.UnixMilli())
	}
	if f.Session != "" {
		where, args = append(where, "session = ?"), append(args, f.Session)
	}
	q := `SELECT at, session, ns, api, model, client, project, input, cache_read, cache_write, output, cost, cost_without, compacted, edited FROM ledger`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	rows, err := s.db.QueryContext(ctx, q+" ORDER BY seq", args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var e session.LedgerEntry
		var at int64
		if err := rows.Scan(&at, &e.Session, &e.Namespace, &e.API, &e.Model, &e.Client, &e.Project,
			&e.InputTokens, &e.CacheReadTokens, &e.CacheWriteTokens, &e.OutputTokens, &e.CostUSD, &e.CostWithoutUSD,
			&e.Compacted, &e.Edited); err != nil {
			return err
		}
		e.Time = time.UnixMilli(at).UTC()
		if err := fn(e); err != nil {
			return err
		}
	}
	return rows.Err()
}
