package pgsession

import (
	"context"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/agentctx/agentctx/internal/base/pgmigrate"
	"github.com/agentctx/agentctx/session"
)

// ledgerMigration creates the table of the session.Ledger, which every
// replica of a fleet appends to.
var ledgerMigration = pgmigrate.Migration{Version: 2, Name: "ledger", SQL: `
CREATE TABLE agentctx_ledger (
	seq          bigserial PRIMARY KEY,
	at           timestamptz NOT NULL,
	session      text NOT NULL,
	ns           text NOT NULL,
	api          text NOT NULL,
	model        text NOT NULL,
	client       text NOT NULL,
	project      text NOT NULL,
	input        bigint NOT NULL,
	cache_read   bigint NOT NULL,
	cache_write  bigint NOT NULL,
	output       bigint NOT NULL,
	cost         double precision NOT NULL,
	cost_without double precision NOT NULL,
	compacted    boolean NOT NULL,
	edited       boolean NOT NULL
);
CREATE INDEX agentctx_ledger_at ON agentctx_ledger (at);
CREATE INDEX agentctx_ledger_session ON agentctx_ledger (session, at);`}

var _ session.LedgerDriver = (*driver)(nil)

// ledgerColumns are the columns of an entry, in LedgerEntry's order.
const ledgerColumns = `at, session, ns, api, model, client, project, input, cache_read, cache_write, output, cost, cost_without, compacted, edited`

// AppendLedger implements session.LedgerDriver: one batch, in one
// transaction.
func (s *driver) AppendLedger(ctx context.Context, entries []session.LedgerEntry) error {
	rows := make([][]any, len(entries))
	for i, e := range entries {
		rows[i] = []any{e.Time, e.Session, e.Namespace, e.API, e.Model, e.Client, e.Project,
			e.InputTokens, e.CacheReadTokens, e.CacheWriteTokens, e.OutputTokens, e.CostUSD, e.CostWithoutUSD,
			e.Compacted, e.Edited}
	}
	_, err := s.pool.CopyFrom(ctx, pgx.Identifier{"agentctx_ledger"}, strings.Split(strings.ReplaceAll(ledgerColumns, " ", ""), ","),
		pgx.CopyFromRows(rows))
	return err
}

// ScanLedger implements session.LedgerDriver, in the order of Append
// (each replica's; the sequence interleaves them).
func (s *driver) ScanLedger(ctx context.Context, f session.LedgerFilter, fn func(session.LedgerEntry) error) error {
	var where []string
	var args []any
	arg := func(cond string, v any) {
		args = append(args, v)
		where = append(where, cond+" $"+strconv.Itoa(len(args)))
	}
	if !f.Since.IsZero() {
		arg("at >=", f.Since)
	}
	if !f.Until.IsZero() {
		arg("at <", f.Until)
	}
	if f.Session != "" {
		arg("session =", f.Session)
	}
	q := `SELECT ` + ledgerColumns + ` FROM agentctx_ledger`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	rows, err := s.pool.Query(ctx, q+" ORDER BY seq", args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var e session.LedgerEntry
		if err := rows.Scan(&e.Time, &e.Session, &e.Namespace, &e.API, &e.Model, &e.Client, &e.Project,
			&e.InputTokens, &e.CacheReadTokens, &e.CacheWriteTokens, &e.OutputTokens, &e.CostUSD, &e.CostWithoutUSD,
			&e.Compacted, &e.Edited); err != nil {
			return err
		}
		e.Time = e.Time.UTC()
		if err := fn(e); err != nil {
			return err
		}
	}
	return rows.Err()
}
