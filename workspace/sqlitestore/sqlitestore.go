// Package sqlitestore is the indexed workspace.Store: every namespace in
// one embedded SQLite file (pure Go, modernc.org/sqlite, no cgo).
//
// Metadata is indexed by key and value, so Query and the offload overview
// stay fast with hundreds of thousands of artifacts. Content is indexed by
// an FTS5 trigram index that Grep uses only as a prefilter: it skips the
// artifacts that cannot contain the literal parts of the pattern (see
// workspace.GrepQuery.Substrings), and every candidate is then searched
// with the RE2 expression itself, so results are exactly those of the other
// backends. Content is stored as a BLOB, byte for byte.
//
// The file uses WAL mode: readers do not wait for a writer, and several
// processes may share it (writers wait for each other up to a timeout).
package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/agentctx/agentctx/session"
	"github.com/agentctx/agentctx/session/sqlitesession"
	"github.com/agentctx/agentctx/workspace"
	"github.com/agentctx/agentctx/workspace/driver"

	"github.com/agentctx/agentctx/internal/base/fsutil"
)

// Options configure a Store. The zero value is the default.
type Options struct {
	// Sync makes every commit wait for the disk (PRAGMA synchronous=FULL):
	// the last commits survive a power loss too. By default a crash of the
	// process loses nothing, a power loss may lose the last commits.
	Sync bool
	// BusyTimeout is how long a writer waits for another process's write
	// transaction; 0 means 10 seconds.
	BusyTimeout time.Duration
}

// store is the driver.Store of a SQLite file. It is safe for concurrent
// use, also by several processes sharing the file.
type store struct {
	db   *sql.DB
	path string
	wmu  sync.Mutex // one write transaction at a time in this process
}

var (
	_ driver.Store       = (*store)(nil)
	_ workspace.Searcher = (*store)(nil)
	_ workspace.Locator  = (*store)(nil)
	_ session.Keeper     = (*store)(nil)
)

// OpenSessions implements session.Keeper: the session state is kept in the
// same SQLite file (session/sqlitesession), over the store's connections.
// Close the returned store before this one.
func (s *store) OpenSessions(ctx context.Context) (session.Store, error) {
	return sqlitesession.New(ctx, s.db, s.path)
}

const schema = `
CREATE TABLE IF NOT EXISTS artifacts (
	rid        INTEGER PRIMARY KEY,
	ns         TEXT NOT NULL,
	id         TEXT NOT NULL,
	type       TEXT NOT NULL,
	created_s  INTEGER NOT NULL,
	created_ns INTEGER NOT NULL,
	chars      INTEGER NOT NULL,
	lines      INTEGER NOT NULL,
	bytes      INTEGER NOT NULL,
	sha256     TEXT NOT NULL,
	metadata   TEXT NOT NULL,
	indexed    INTEGER NOT NULL,
	content    BLOB NOT NULL,
	UNIQUE (ns, id)
);
CREATE INDEX IF NOT EXISTS artifacts_order ON artifacts (ns, created_s, created_ns, id);
CREATE INDEX IF NOT EXISTS artifacts_unindexed ON artifacts (rid) WHERE indexed = 0;
CREATE TABLE IF NOT EXISTS meta (
	rid   INTEGER NOT NULL,
	key   TEXT NOT NULL,
	ns    TEXT NOT NULL,
	value TEXT NOT NULL,
	PRIMARY KEY (rid, key)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS meta_kv ON meta (ns, key, value);
CREATE VIRTUAL TABLE IF NOT EXISTS artifacts_fts USING fts5 (
	content, content='', contentless_delete=1, tokenize='trigram'
);
`

// Open opens (creating it when needed) the SQLite file at path. The zero
// Options means the documented defaults.
func Open(ctx context.Context, path string, opts Options) (workspace.Store, error) {
	s, err := open(ctx, path, opts)
	if err != nil {
		return nil, err
	}
	return workspace.NewStore(s, workspace.StoreOptions{}), nil
}

// open returns the driver of Open.
func open(ctx context.Context, path string, o Options) (*store, error) {
	if o.BusyTimeout <= 0 {
		o.BusyTimeout = 10 * time.Second
	}
	sync := "NORMAL"
	if o.Sync {
		sync = "FULL"
	}
	dsn := fmt.Sprintf("file:%s?_pragma=busy_timeout(%d)&_pragma=journal_mode(WAL)&_pragma=synchronous(%s)",
		escapePath(path), o.BusyTimeout.Milliseconds(), sync)
	if path != ":memory:" && path != "" {
		if err := fsutil.CreatePrivate(path); err != nil {
			return nil, fmt.Errorf("sqlitestore: open %s: %w", path, err)
		}
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: open %s: %w", path, err)
	}
	// Processes opening a new file at once may find it locked while one
	// of them sets it up (WAL mode): try again within the busy timeout.
	err = fsutil.RetryBusy(ctx, o.BusyTimeout, func() error {
		_, err := db.ExecContext(ctx, schema)
		return err
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlitestore: open %s: %w", path, err)
	}
	return &store{db: db, path: path}, nil
}

// escapePath makes a file path safe inside a file: URI.
func escapePath(p string) string {
	return strings.NewReplacer("%", "%25", "?", "%3F", "#", "%23").Replace(p)
}

// Location implements workspace.Locator: the path of the SQLite file.
func (s *store) Location() string { return s.path }

// Put implements driver.Store.
func (s *store) Put(ctx context.Context, ns string, a workspace.Artifact) (workspace.Info, error) {
	return s.write(ctx, "put", ns, a)
}

// Create implements driver.Store: an INSERT that does nothing on a
// taken id, in a write transaction (which SQLite serializes across
// processes).
func (s *store) Create(ctx context.Context, ns string, a workspace.Artifact) (workspace.Info, error) {
	return s.write(ctx, "create", ns, a)
}

// write stores a; op "create" stores it only when its id is free.
func (s *store) write(ctx context.Context, op, ns string, a workspace.Artifact) (workspace.Info, error) {
	m := a // measured by the portable store
	md, err := json.Marshal(m.Metadata)
	if err != nil {
		return workspace.Info{}, err
	}
	indexed := utf8.ValidString(m.Content)
	s.wmu.Lock()
	defer s.wmu.Unlock()
	err = s.tx(ctx, func(tx *sql.Tx) error {
		// Writes first: the transaction takes the write lock before it
		// reads anything, so it never fails on a stale snapshot.
		var old int64
		err := sql.ErrNoRows
		if op == "put" {
			err = tx.QueryRowContext(ctx, `DELETE FROM artifacts WHERE ns = ? AND id = ? RETURNING rid`, ns, m.ID).Scan(&old)
		}
		switch {
		case err == nil:
			if _, err := tx.ExecContext(ctx, `DELETE FROM meta WHERE rid = ?`, old); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `DELETE FROM artifacts_fts WHERE rowid = ?`, old); err != nil {
				return err
			}
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		var rid int64
		err = tx.QueryRowContext(ctx, `INSERT INTO artifacts
			(ns, id, type, created_s, created_ns, chars, lines, bytes, sha256, metadata, indexed, content)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (ns, id) DO NOTHING RETURNING rid`,
			ns, m.ID, string(m.Type), m.Created.Unix(), m.Created.Nanosecond(), m.Chars, m.Lines, m.Bytes,
			m.SHA256, string(md), indexed, []byte(m.Content)).Scan(&rid)
		if errors.Is(err, sql.ErrNoRows) { // only Create leaves the id taken
			return workspace.ErrExists
		}
		if err != nil {
			return err
		}
		for k, v := range m.Metadata {
			if _, err := tx.ExecContext(ctx, `INSERT INTO meta (rid, key, ns, value) VALUES (?, ?, ?, ?)`, rid, k, ns, v); err != nil {
				return err
			}
		}
		if indexed {
			if _, err := tx.ExecContext(ctx, `INSERT INTO artifacts_fts (rowid, content) VALUES (?, ?)`, rid, m.Content); err != nil {
				return err
			}
		}
		return nil
	})
	if errors.Is(err, workspace.ErrExists) {
		return workspace.Info{}, err
	}
	if err != nil {
		return workspace.Info{}, err
	}
	return m.Info.Clone(), nil
}

func (s *store) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

const infoColumns = `a.id, a.type, a.created_s, a.created_ns, a.chars, a.lines, a.bytes, a.sha256, a.metadata`

type scanner interface{ Scan(dest ...any) error }

func scanInfo(row scanner, extra ...any) (workspace.Info, error) {
	var (
		info     workspace.Info
		typ, md  string
		sec, nan int64
	)
	dest := append([]any{&info.ID, &typ, &sec, &nan, &info.Chars, &info.Lines, &info.Bytes, &info.SHA256, &md}, extra...)
	if err := row.Scan(dest...); err != nil {
		return info, err
	}
	info.Type = workspace.ArtifactType(typ)
	info.Created = time.Unix(sec, nan).UTC()
	if info.Created.IsZero() {
		info.Created = time.Time{}
	}
	info.Metadata = workspace.Metadata{}
	if err := json.Unmarshal([]byte(md), &info.Metadata); err != nil {
		return info, fmt.Errorf("metadata of %q: %w", info.ID, err)
	}
	return info, nil
}

func (s *store) get(ctx context.Context, op, ns, id string) (*workspace.Artifact, error) {
	var content []byte
	info, err := scanInfo(s.db.QueryRowContext(ctx,
		`SELECT `+infoColumns+`, a.content FROM artifacts a WHERE a.ns = ? AND a.id = ?`, ns, id), &content)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, workspace.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return &workspace.Artifact{Info: info, Content: string(content)}, nil
}

// Get implements driver.Store.
func (s *store) Get(ctx context.Context, ns, id string) (*workspace.Artifact, error) {
	return s.get(ctx, "get", ns, id)
}

// Stat implements driver.Store.
func (s *store) Stat(ctx context.Context, ns, id string) (workspace.Info, error) {
	info, err := scanInfo(s.db.QueryRowContext(ctx, `SELECT `+infoColumns+` FROM artifacts a WHERE a.ns = ? AND a.id = ?`, ns, id))
	if errors.Is(err, sql.ErrNoRows) {
		return workspace.Info{}, workspace.ErrNotFound
	}
	if err != nil {
		return workspace.Info{}, err
	}
	return info, nil
}

// where returns the WHERE clause and arguments selecting the artifacts of
// ns that match f.
func where(ns string, f workspace.Filter) (string, []any) {
	var b strings.Builder
	args := []any{ns}
	b.WriteString(`a.ns = ?`)
	for k, v := range f.Metadata {
		if v == "" {
			b.WriteString(` AND a.rid NOT IN (SELECT rid FROM meta WHERE ns = ? AND key = ? AND value <> '')`)
		} else {
			b.WriteString(` AND a.rid IN (SELECT rid FROM meta WHERE ns = ? AND key = ? AND value = ?)`)
			args = append(args, ns, k, v)
			continue
		}
		args = append(args, ns, k)
	}
	return b.String(), args
}

const orderBy = ` ORDER BY a.created_s, a.created_ns, a.id`

// Grep implements workspace.Searcher. Over a filter, the FTS5 trigram index
// narrows the candidates when the pattern has literal parts of three or
// more characters; content that is not valid UTF-8 is not indexed and is
// always searched.
func (s *store) Grep(ctx context.Context, ns string, q workspace.GrepQuery) (*workspace.GrepResult, error) {
	g, err := driver.NewGrepper(q)
	if err != nil {
		return nil, err
	}
	if q.ID != "" {
		a, err := s.get(ctx, "grep", ns, q.ID)
		if err != nil {
			return nil, err
		}
		g.Add(a.ID, a.Content)
		return g.Result(), nil
	}
	cond, args := where(ns, q.Filter)
	subs := q.Substrings()
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true}) // one snapshot for count and scan
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	scanCond, scanArgs := cond, args
	if len(subs) > 0 {
		quoted := make([]string, len(subs))
		for i, sub := range subs {
			quoted[i] = `"` + strings.ReplaceAll(sub, `"`, `""`) + `"`
		}
		// Candidates: what the index matches, and content it does not hold.
		scanCond += ` AND a.rid IN (SELECT rowid FROM artifacts_fts WHERE artifacts_fts MATCH ?
			UNION ALL SELECT rid FROM artifacts WHERE indexed = 0)`
		scanArgs = append(append([]any(nil), args...), strings.Join(quoted, " AND "))
	}
	rows, err := tx.QueryContext(ctx, `SELECT a.id, a.content FROM artifacts a WHERE `+scanCond+orderBy, scanArgs...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	scanned := 0
	for rows.Next() {
		var (
			id      string
			content []byte
		)
		if err := rows.Scan(&id, &content); err != nil {
			return nil, err
		}
		g.Add(id, string(content))
		scanned++
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(subs) > 0 {
		var inScope int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM artifacts a WHERE `+cond, args...).Scan(&inScope); err != nil {
			return nil, err
		}
		g.Skipped(inScope - scanned)
	}
	return g.Result(), nil
}

// Query implements driver.Store.
func (s *store) Query(ctx context.Context, ns string, f workspace.Filter) ([]workspace.Info, error) {
	cond, args := where(ns, f)
	query := `SELECT ` + infoColumns + ` FROM artifacts a WHERE ` + cond + orderBy
	if f.Limit > 0 || f.Offset > 0 {
		limit := int64(f.Limit)
		if limit <= 0 {
			limit = -1
		}
		query += ` LIMIT ? OFFSET ?`
		args = append(args, limit, max(f.Offset, 0))
	}
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	list := []workspace.Info{}
	for rows.Next() {
		info, err := scanInfo(rows)
		if err != nil {
			return nil, err
		}
		list = append(list, info)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return list, nil
}

// Delete implements driver.Store.
func (s *store) Delete(ctx context.Context, ns, id string) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	found := false
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var rid int64
		err := tx.QueryRowContext(ctx, `DELETE FROM artifacts WHERE ns = ? AND id = ? RETURNING rid`, ns, id).Scan(&rid)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		found = true
		if _, err := tx.ExecContext(ctx, `DELETE FROM meta WHERE rid = ?`, rid); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM artifacts_fts WHERE rowid = ?`, rid)
		return err
	})
	if err != nil {
		return err
	}
	if !found {
		return workspace.ErrNotFound
	}
	return nil
}

// Close implements driver.Store: it closes the database.
func (s *store) Close() error {
	return s.db.Close()
}

// Namespaces implements driver.Store.
func (s *store) Namespaces(ctx context.Context) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT DISTINCT ns FROM artifacts`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var ns string
		if err := rows.Scan(&ns); err != nil {
			return nil, err
		}
		out = append(out, ns)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	slices.Sort(out)
	return out, nil
}
