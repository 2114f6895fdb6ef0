package pgstore

import (
	"context"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/agentctx/agentctx/workspace"
	"github.com/agentctx/agentctx/workspace/driver"
)

// Grep implements workspace.Searcher. The server selects the artifacts
// that may match (see pgRegex); each is then searched with the RE2
// expression, so the result is exactly the generic one. Artifacts the
// server rules out are counted as searched, with their lines.
func (s *store) Grep(ctx context.Context, ns string, q workspace.GrepQuery) (*workspace.GrepResult, error) {
	g, err := driver.NewGrepper(q)
	if err != nil {
		return nil, err
	}
	re, ok := "", false
	if s.regex {
		re, ok = pgRegex(q.Pattern, q.IgnoreCase)
	}
	res, err := s.grep(ctx, ns, q, g, re, ok)
	if ok && err != nil && regexFailed(err) && ctx.Err() == nil {
		g, _ = driver.NewGrepper(q)
		res, err = s.grep(ctx, ns, q, g, "", false)
	}
	return res, err
}

// grep searches the artifacts q selects in ns with g, the server ruling
// out those that cannot match the POSIX expression re when useRe.
func (s *store) grep(ctx context.Context, ns string, q workspace.GrepQuery, g *driver.Grepper, re string, useRe bool) (*workspace.GrepResult, error) {
	cond, may, args, trgm := s.grepWhere(ns, q, re, useRe)
	// One snapshot for the candidates and their content.
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(context.Background())
	if trgm {
		// The planner prices a regular expression as cheap as an equality
		// and would read every chunk rather than ask the trigram index:
		// leave it only the index.
		if _, err := tx.Exec(ctx, `SET LOCAL enable_seqscan = off; SET LOCAL enable_indexscan = off`); err != nil {
			return nil, err
		}
	}
	// MATERIALIZED: the server decides once per artifact, not per chunk.
	// The artifacts that may match come with their chunks, in order; the
	// others are one row at the end: how many, and their lines.
	rows, err := tx.Query(ctx, `WITH x AS MATERIALIZED (
			SELECT a.rid, a.id, a.lines, a.created_s, a.created_ns, `+may+` AS may
			FROM agentctx_artifacts a WHERE `+cond+`)
		SELECT id, lines, n, txt, bin FROM (
			SELECT x.id, x.lines, 1::bigint AS n, c.txt, c.bin, x.created_s, x.created_ns, c.seq
			FROM x LEFT JOIN agentctx_artifact_chunks c ON c.rid = x.rid WHERE x.may
			UNION ALL
			SELECT NULL, coalesce(sum(x.lines), 0)::bigint, count(*), NULL, NULL, NULL, NULL, NULL
			FROM x WHERE NOT x.may) r
		ORDER BY r.id IS NULL, r.created_s, r.created_ns, r.id, r.seq`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	found, err := s.grepRows(rows, g)
	if err != nil {
		return nil, err
	}
	if q.ID != "" && !found {
		return nil, workspace.ErrNotFound
	}
	return g.Result(), nil
}

// grepWhere returns the condition on the artifacts q selects in ns, the
// condition under which one may match (true unless useRe), their
// arguments, and whether the candidates are found by the trigram index.
func (s *store) grepWhere(ns string, q workspace.GrepQuery, re string, useRe bool) (cond, may string, args []any, trgm bool) {
	cond, args = `a.ns = $1 AND a.id = $2`, []any{[]byte(ns), []byte(q.ID)}
	if q.ID == "" {
		cond, args = where(ns, q.Filter, 0)
	}
	may = `true`
	if useRe {
		args = append(args, re)
		n := strconv.Itoa(len(args))
		if trgm = s.trgm && q.ID == "" && len(q.Substrings()) > 0; trgm {
			// One set of candidate chunks, found by the trigram index
			// (the pattern has literal parts it can use).
			may = `(NOT a.searchable OR a.rid IN (SELECT m.rid FROM agentctx_artifact_chunks m WHERE m.txt ~ $` + n + `))`
		} else {
			may = `(NOT a.searchable OR EXISTS (SELECT 1 FROM agentctx_artifact_chunks m
				WHERE m.rid = a.rid AND m.txt ~ $` + n + `))`
		}
	}
	return cond, may, args, trgm
}

// grepRows feeds g the rows of grep's query: each candidate artifact's
// chunks, in order, then one row counting the artifacts ruled out. It
// reports whether any artifact was selected.
func (s *store) grepRows(rows pgx.Rows, g *driver.Grepper) (found bool, err error) {
	var (
		cur     []byte
		have    bool
		content strings.Builder
	)
	flush := func() {
		if have {
			g.Add(string(cur), content.String())
			content.Reset()
			have = false
		}
	}
	for rows.Next() {
		var (
			id       []byte
			lines, n int64
		)
		if err := rows.Scan(&id, &lines, &n, nil, nil); err != nil {
			return false, err
		}
		if id == nil { // the artifacts ruled out
			flush()
			g.SearchedElsewhere(int(n), int(lines))
			s.ruledOut.Add(n)
			found = found || n > 0
			continue
		}
		found = true
		if !have || string(id) != string(cur) {
			flush()
			cur, have = append(cur[:0], id...), true
		}
		raw := rows.RawValues()
		content.Write(raw[3])
		content.Write(raw[4])
	}
	if err := rows.Err(); err != nil {
		return false, err
	}
	flush()
	return found, nil
}
