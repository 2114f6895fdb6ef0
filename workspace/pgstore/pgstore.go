// Package pgstore is the workspace.Store for fleets: every namespace in a
// PostgreSQL database that many agents, processes and machines share
// (github.com/jackc/pgx/v5).
//
//	store, err := pgstore.Open(ctx, "postgres://agentctx@db.internal/agentctx", pgstore.Options{})
//
// Open creates the schema, and upgrades it, by itself: versioned
// migrations recorded in the table agentctx_migrations, applied once under
// an advisory lock however many replicas start together. The tables are
// prefixed agentctx_, so the database may hold other things.
//
// Content is stored in chunks of at most a megabyte (Options.ChunkBytes),
// cut at line ends: Put sends a large content chunk by chunk and Get
// assembles it from a stream of rows, so a 50 MB artifact is never held
// twice in memory. A chunk that is valid UTF-8 without NUL is stored as
// text, which lets the server search it.
//
// Grep runs on the server where it is exact: the RE2 pattern is translated
// to a PostgreSQL regular expression that matches every line the pattern
// matches (see the package's regex.go), the server returns only the
// artifacts that may match, and those are then searched with the RE2
// expression itself, so results are exactly those of the other backends.
// Lines reads only the chunks that hold the lines asked for.
package pgstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentctx/agentctx/internal/base/pgmigrate"
	"github.com/agentctx/agentctx/internal/base/secret"
	"github.com/agentctx/agentctx/session"
	"github.com/agentctx/agentctx/session/pgsession"
	"github.com/agentctx/agentctx/workspace"
	"github.com/agentctx/agentctx/workspace/driver"
)

// DefaultChunkBytes is the largest chunk of content stored in one row.
const DefaultChunkBytes = 1 << 20

// Options configure a Store. The zero value is the default.
type Options struct {
	// ChunkBytes is the largest chunk of content stored in one row (and
	// sent or received in one message); 0 means DefaultChunkBytes. Chunks
	// end at a line end when the line fits.
	ChunkBytes int
	// MaxConns caps the connections to the server; 0 means pgxpool's
	// default (4, or the number of CPUs when more).
	MaxConns int32
	// Logger receives a record when Open migrates the schema; nil discards.
	Logger *slog.Logger
}

// Store is a workspace.Store in a PostgreSQL database. It is safe for
// concurrent use, also by many processes sharing the database.
type store struct {
	pool  *pgxpool.Pool
	loc   string
	chunk int
	regex bool // the server encoding is UTF8: the regex prefilter is usable
	trgm  bool // the text chunks have a trigram index (pg_trgm)
	// ruledOut counts the artifacts Grep did not read because the server
	// showed they cannot match (the tests check that the prefilter works).
	ruledOut atomic.Int64
}

var (
	_ driver.Store         = (*store)(nil)
	_ workspace.LineReader = (*store)(nil)
	_ workspace.Searcher   = (*store)(nil)
	_ workspace.Locator    = (*store)(nil)
	_ session.Keeper       = (*store)(nil)
)

// OpenSessions implements session.Keeper: the session state is kept in the
// same database (session/pgsession), over the store's connection pool.
// Close the returned store before this one.
func (s *store) OpenSessions(ctx context.Context) (session.Store, error) {
	return pgsession.New(ctx, s.pool, s.loc)
}

// Component is the name of the workspace schema in agentctx_migrations.
const Component = "workspace"

// migrations is the workspace schema, in order. Ids, namespaces, types and
// metadata are bytea: any UTF-8 (NUL included) is kept, and they order
// byte for byte, as Go compares strings. Metadata is kept whole (JSON) and
// as arrays of keys and of key-value pairs (see pair) that a GIN index
// serves to Query.
var migrations = []pgmigrate.Migration{
	{Version: 1, Name: "artifacts, chunks and metadata", SQL: `
CREATE TABLE agentctx_artifacts (
	rid        bigserial PRIMARY KEY,
	ns         bytea NOT NULL,
	id         bytea NOT NULL,
	type       bytea NOT NULL,
	created_s  bigint NOT NULL,
	created_ns integer NOT NULL,
	chars      bigint NOT NULL,
	lines      bigint NOT NULL,
	bytes      bigint NOT NULL,
	sha256     text NOT NULL,
	metadata   bytea NOT NULL,
	meta_keys  bytea[] NOT NULL,
	meta_pairs bytea[] NOT NULL,
	searchable boolean NOT NULL,
	UNIQUE (ns, id)
);
CREATE INDEX agentctx_artifacts_order ON agentctx_artifacts (ns, created_s, created_ns, id);
CREATE INDEX agentctx_artifacts_meta ON agentctx_artifacts USING gin (meta_pairs);
CREATE TABLE agentctx_artifact_chunks (
	rid   bigint NOT NULL REFERENCES agentctx_artifacts (rid) ON DELETE CASCADE,
	seq   integer NOT NULL,
	line0 bigint NOT NULL,
	line1 bigint NOT NULL,
	cont  boolean NOT NULL,
	txt   text,
	bin   bytea,
	PRIMARY KEY (rid, seq)
);
ALTER TABLE agentctx_artifact_chunks ALTER COLUMN txt SET STORAGE EXTERNAL;
ALTER TABLE agentctx_artifact_chunks ALTER COLUMN bin SET STORAGE EXTERNAL;
`},
	{Version: 2, Name: "trigram index on text chunks, when pg_trgm is available", SQL: `
DO $$
BEGIN
	CREATE EXTENSION IF NOT EXISTS pg_trgm;
	CREATE INDEX agentctx_artifact_chunks_trgm ON agentctx_artifact_chunks USING gin (txt gin_trgm_ops);
EXCEPTION WHEN OTHERS THEN
	RAISE NOTICE 'agentctx: no pg_trgm (%): grep reads every text chunk of a namespace', SQLERRM;
END
$$;
`},
}

// Open connects to the database at url (a postgres:// URL or a libpq
// key=value string), creating or migrating the schema when needed. The
// zero Options means the documented defaults.
func Open(ctx context.Context, url string, opts Options) (workspace.Store, error) {
	s, err := open(ctx, url, opts)
	if err != nil {
		return nil, err
	}
	return workspace.NewStore(s, workspace.StoreOptions{}), nil
}

// open returns the driver of Open.
func open(ctx context.Context, url string, o Options) (*store, error) {
	if o.ChunkBytes <= 0 {
		o.ChunkBytes = DefaultChunkBytes
	}
	o.ChunkBytes = max(o.ChunkBytes, 8)
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	loc := redact(url)
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("pgstore: open %s: %w", loc, err)
	}
	if o.MaxConns > 0 {
		cfg.MaxConns = o.MaxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgstore: open %s: %w", loc, err)
	}
	s := &store{pool: pool, loc: loc, chunk: o.ChunkBytes}
	v, err := pgmigrate.Apply(ctx, pool, Component, migrations)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("pgstore: open %s: %w", loc, err)
	}
	log.DebugContext(ctx, "pgstore: schema ready", "location", loc, "version", v)
	var enc string
	if err := pool.QueryRow(ctx, `SELECT current_setting('server_encoding')`).Scan(&enc); err != nil {
		pool.Close()
		return nil, fmt.Errorf("pgstore: open %s: %w", loc, err)
	}
	s.regex = enc == "UTF8"
	if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_indexes
		WHERE schemaname = current_schema() AND indexname = 'agentctx_artifact_chunks_trgm')`).Scan(&s.trgm); err != nil {
		pool.Close()
		return nil, fmt.Errorf("pgstore: open %s: %w", loc, err)
	}
	if !s.trgm {
		log.InfoContext(ctx, "pgstore: no pg_trgm index: grep over many artifacts reads every text chunk", "location", loc)
	}
	return s, nil
}

// redact returns a database URL with its secrets masked.
func redact(s string) string { return secret.URL(s) }

// Location implements workspace.Locator: the database URL without its
// password.
func (s *store) Location() string { return s.loc }

// chunk is a part of a content: bytes [start, end), lines line0..line1
// (1-based; the first may have begun in the previous chunk, cont).
type chunk struct {
	start, end   int
	line0, line1 int64
	cont         bool
	text         bool // valid UTF-8 without NUL: stored as text
}

// split cuts content into chunks of at most size bytes, at a line end when
// the line fits, else at a character boundary. A chunk is text when it is
// valid UTF-8 without NUL and the server keeps text in UTF-8 (utf8Server).
// searchable reports that every chunk is text and no line spans two
// chunks.
func split(content string, size int, utf8Server bool) (chunks []chunk, searchable bool) {
	searchable = true
	line := int64(1)
	cont := false
	for start := 0; start < len(content); {
		end := min(start+size, len(content))
		if end < len(content) {
			if i := strings.LastIndexByte(content[start:end], '\n'); i >= 0 {
				end = start + i + 1
			} else {
				for end > start+1 && !utf8.RuneStart(content[end]) {
					end--
				}
			}
		}
		part := content[start:end]
		c := chunk{start: start, end: end, line0: line, cont: cont,
			text: utf8Server && utf8.ValidString(part) && strings.IndexByte(part, 0) < 0}
		n := int64(strings.Count(part, "\n"))
		cont = part[len(part)-1] != '\n'
		c.line1 = line + n
		if !cont {
			c.line1--
		}
		line += n
		if !c.text || cont && end < len(content) {
			searchable = false
		}
		chunks = append(chunks, c)
		start = end
	}
	return chunks, searchable
}

// copyReader streams chunks in PostgreSQL's binary COPY format, reading
// the content in place: nothing of it is copied but through the driver's
// small send buffer.
func copyReader(rid int64, content string, chunks []chunk) io.Reader {
	h := []byte("PGCOPY\n\xff\r\n\x00\x00\x00\x00\x00\x00\x00\x00\x00")
	parts := make([]io.Reader, 0, 2*len(chunks)+2)
	for i, c := range chunks {
		h = binary.BigEndian.AppendUint16(h, 7)
		h = binary.BigEndian.AppendUint32(h, 8)
		h = binary.BigEndian.AppendUint64(h, uint64(rid))
		h = binary.BigEndian.AppendUint32(h, 4)
		h = binary.BigEndian.AppendUint32(h, uint32(i))
		h = binary.BigEndian.AppendUint32(h, 8)
		h = binary.BigEndian.AppendUint64(h, uint64(c.line0))
		h = binary.BigEndian.AppendUint32(h, 8)
		h = binary.BigEndian.AppendUint64(h, uint64(c.line1))
		h = binary.BigEndian.AppendUint32(h, 1)
		if c.cont {
			h = append(h, 1)
		} else {
			h = append(h, 0)
		}
		null := binary.BigEndian.AppendUint32(nil, 0xFFFFFFFF)
		if !c.text {
			h = append(h, null...) // txt
		}
		h = binary.BigEndian.AppendUint32(h, uint32(c.end-c.start))
		parts = append(parts, bytes.NewReader(h), strings.NewReader(content[c.start:c.end]))
		h = nil
		if c.text {
			h = append(h, null...) // bin
		}
	}
	h = binary.BigEndian.AppendUint16(h, 0xFFFF)
	return io.MultiReader(append(parts, bytes.NewReader(h))...)
}

// Put implements driver.Store. The content is streamed chunk by chunk
// (COPY) in one transaction: readers see the old artifact or the new one
// whole.
func (s *store) Put(ctx context.Context, ns string, a workspace.Artifact) (workspace.Info, error) {
	return s.write(ctx, "put", ns, a)
}

// Create implements driver.Store: an INSERT that does nothing on a
// taken id (the server makes concurrent inserts of one id wait for each
// other), then the content, in one transaction.
func (s *store) Create(ctx context.Context, ns string, a workspace.Artifact) (workspace.Info, error) {
	return s.write(ctx, "create", ns, a)
}

// upsert is what Put does with a taken id: replace the description (the
// chunks are then replaced too); Create does nothing.
const upsert = ` ON CONFLICT (ns, id) DO UPDATE SET type = EXCLUDED.type, created_s = EXCLUDED.created_s,
				created_ns = EXCLUDED.created_ns, chars = EXCLUDED.chars, lines = EXCLUDED.lines,
				bytes = EXCLUDED.bytes, sha256 = EXCLUDED.sha256, metadata = EXCLUDED.metadata,
				meta_keys = EXCLUDED.meta_keys, meta_pairs = EXCLUDED.meta_pairs, searchable = EXCLUDED.searchable`

// write stores a; op "create" stores it only when its id is free.
func (s *store) write(ctx context.Context, op, ns string, a workspace.Artifact) (workspace.Info, error) {
	m := a // measured by the portable store
	md, err := json.Marshal(m.Metadata)
	if err != nil {
		return workspace.Info{}, err
	}
	onConflict := upsert
	if op == "create" {
		onConflict = ` ON CONFLICT (ns, id) DO NOTHING`
	}
	chunks, searchable := split(m.Content, s.chunk, s.regex)
	keys := make([][]byte, 0, len(m.Metadata))
	pairs := make([][]byte, 0, len(m.Metadata))
	for k, v := range m.Metadata {
		keys, pairs = append(keys, []byte(k)), append(pairs, pair(k, v))
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var rid int64
		err := tx.QueryRow(ctx, `INSERT INTO agentctx_artifacts
			(ns, id, type, created_s, created_ns, chars, lines, bytes, sha256, metadata, meta_keys, meta_pairs, searchable)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`+onConflict+` RETURNING rid`,
			[]byte(ns), []byte(m.ID), []byte(m.Type), m.Created.Unix(), m.Created.Nanosecond(),
			m.Chars, m.Lines, m.Bytes, m.SHA256, md, keys, pairs, searchable).Scan(&rid)
		if errors.Is(err, pgx.ErrNoRows) { // only Create leaves the id taken
			return workspace.ErrExists
		}
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM agentctx_artifact_chunks WHERE rid = $1`, rid); err != nil {
			return err
		}
		if len(chunks) > 0 {
			if _, err := tx.Conn().PgConn().CopyFrom(ctx, copyReader(rid, m.Content, chunks),
				`COPY agentctx_artifact_chunks (rid, seq, line0, line1, cont, txt, bin) FROM STDIN (FORMAT binary)`); err != nil {
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

const infoColumns = `a.id, a.type, a.created_s, a.created_ns, a.chars, a.lines, a.bytes, a.sha256, a.metadata`

// infoDest returns the scan targets of infoColumns and a function that
// builds the Info from them.
func infoDest() ([]any, func() (workspace.Info, error)) {
	var (
		id, typ, md []byte
		sec         int64
		nsec        int32
		info        workspace.Info
		chars       int64
		lines       int64
		bytes       int64
	)
	dest := []any{&id, &typ, &sec, &nsec, &chars, &lines, &bytes, &info.SHA256, &md}
	return dest, func() (workspace.Info, error) {
		info.ID, info.Type = string(id), workspace.ArtifactType(typ)
		info.Chars, info.Lines, info.Bytes = int(chars), int(lines), int(bytes)
		info.Created = time.Unix(sec, int64(nsec)).UTC()
		if info.Created.IsZero() {
			info.Created = time.Time{}
		}
		info.Metadata = workspace.Metadata{}
		if err := json.Unmarshal(md, &info.Metadata); err != nil {
			return info, fmt.Errorf("metadata of %q: %w", info.ID, err)
		}
		return info, nil
	}
}

// Stat implements driver.Store.
func (s *store) Stat(ctx context.Context, ns, id string) (workspace.Info, error) {
	dest, build := infoDest()
	err := s.pool.QueryRow(ctx, `SELECT `+infoColumns+` FROM agentctx_artifacts a WHERE a.ns = $1 AND a.id = $2`,
		[]byte(ns), []byte(id)).Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return workspace.Info{}, workspace.ErrNotFound
	}
	if err != nil {
		return workspace.Info{}, err
	}
	info, err := build()
	if err != nil {
		return workspace.Info{}, err
	}
	return info, nil
}

// Get implements driver.Store. The content arrives as a stream of
// chunks, appended to a buffer of its final size.
func (s *store) Get(ctx context.Context, ns, id string) (*workspace.Artifact, error) {
	return s.get(ctx, "get", ns, id)
}

func (s *store) get(ctx context.Context, op, ns, id string) (*workspace.Artifact, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+infoColumns+`, c.txt, c.bin
		FROM agentctx_artifacts a LEFT JOIN agentctx_artifact_chunks c ON c.rid = a.rid
		WHERE a.ns = $1 AND a.id = $2 ORDER BY c.seq`, []byte(ns), []byte(id))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var (
		a       *workspace.Artifact
		content strings.Builder
	)
	for rows.Next() {
		if a == nil {
			dest, build := infoDest()
			if err := rows.Scan(append(dest, nil, nil)...); err != nil {
				return nil, err
			}
			info, err := build()
			if err != nil {
				return nil, err
			}
			a = &workspace.Artifact{Info: info}
			content.Grow(info.Bytes)
		}
		raw := rows.RawValues()
		content.Write(raw[len(raw)-2])
		content.Write(raw[len(raw)-1])
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if a == nil {
		return nil, workspace.ErrNotFound
	}
	a.Content = content.String()
	return a, nil
}

// Lines implements workspace.LineReader: it reads only the chunks that
// hold lines start..end.
func (s *store) Lines(ctx context.Context, ns, id string, start, end int) (*workspace.LineRange, error) {
	// Clamp before the query: the bounds are bigint.
	qstart, qend := int64(max(start, 0)), int64(min(max(end, 0), 1<<62))
	rows, err := s.pool.Query(ctx, `SELECT a.lines, c.line0, c.cont, c.txt, c.bin
		FROM agentctx_artifacts a LEFT JOIN agentctx_artifact_chunks c
			ON c.rid = a.rid AND c.line0 <= $4 AND c.line1 >= $3
		WHERE a.ns = $1 AND a.id = $2 ORDER BY c.seq`, []byte(ns), []byte(id), qstart, qend)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var (
		found bool
		total int64
		first *int64
		cont  *bool
		text  strings.Builder
	)
	for rows.Next() {
		var line0 *int64
		var c *bool
		if err := rows.Scan(&total, &line0, &c, nil, nil); err != nil {
			return nil, err
		}
		found = true
		if first == nil && line0 != nil {
			first, cont = line0, c
		}
		raw := rows.RawValues()
		text.Write(raw[3])
		text.Write(raw[4])
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if !found {
		return nil, workspace.ErrNotFound
	}
	end, err = driver.CheckRange(start, end, int(total))
	if err != nil {
		return nil, err
	}
	// The text starts at line *first, mid-line when *cont (then that line
	// is before start: its beginning is not needed).
	body, line := text.String(), int(*first)
	if *cont {
		i := strings.IndexByte(body, '\n')
		body, line = body[i+1:], line+1
	}
	lr, err := driver.LinesOf(id, body, start-line+1, end-line+1)
	if err != nil {
		return nil, fmt.Errorf("chunks of lines %d-%d: %w", start, end, err)
	}
	lr.Start, lr.End, lr.Total = start, end, int(total)
	return lr, nil
}

// pair encodes a metadata entry as one array element: the key's length,
// the key, the value.
func pair(k, v string) []byte {
	b := binary.AppendUvarint(make([]byte, 0, binary.MaxVarintLen64+len(k)+len(v)), uint64(len(k)))
	return append(append(b, k...), v...)
}

// where returns the condition and arguments selecting the artifacts of ns
// that match f; numbering of the arguments starts after n.
func where(ns string, f workspace.Filter, n int) (string, []any) {
	var b strings.Builder
	args := []any{[]byte(ns)}
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d::bytea[]", n+len(args))
	}
	fmt.Fprintf(&b, `a.ns = $%d`, n+1)
	var want [][]byte
	for k, v := range f.Metadata {
		if v == "" { // a missing key reads as ""
			fmt.Fprintf(&b, ` AND (NOT a.meta_keys @> %s OR a.meta_pairs @> %s)`, arg([][]byte{[]byte(k)}), arg([][]byte{pair(k, "")}))
			continue
		}
		want = append(want, pair(k, v))
	}
	if len(want) > 0 {
		fmt.Fprintf(&b, ` AND a.meta_pairs @> %s`, arg(want))
	}
	return b.String(), args
}

const orderBy = ` ORDER BY a.created_s, a.created_ns, a.id`

// Query implements driver.Store.
func (s *store) Query(ctx context.Context, ns string, f workspace.Filter) ([]workspace.Info, error) {
	cond, args := where(ns, f, 0)
	query := `SELECT ` + infoColumns + ` FROM agentctx_artifacts a WHERE ` + cond + orderBy
	if f.Offset > 0 {
		args = append(args, int64(f.Offset))
		query += fmt.Sprintf(` OFFSET $%d`, len(args))
	}
	if f.Limit > 0 {
		args = append(args, int64(f.Limit))
		query += fmt.Sprintf(` LIMIT $%d`, len(args))
	}
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	list := []workspace.Info{}
	for rows.Next() {
		dest, build := infoDest()
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		info, err := build()
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
	tag, err := s.pool.Exec(ctx, `DELETE FROM agentctx_artifacts WHERE ns = $1 AND id = $2`, []byte(ns), []byte(id))
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return workspace.ErrNotFound
	}
	return nil
}

// Close implements driver.Store: it closes the connections.
func (s *store) Close() error {
	s.pool.Close()
	return nil
}

// regexFailed reports whether err is the server refusing a regular
// expression (invalid, or too complex), so the search runs without it.
func regexFailed(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "2201B" || strings.HasPrefix(pe.Code, "54"))
}

// Namespaces implements driver.Store.
func (s *store) Namespaces(ctx context.Context) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT DISTINCT ns FROM agentctx_artifacts ORDER BY ns`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var ns []byte
		if err := rows.Scan(&ns); err != nil {
			return nil, err
		}
		out = append(out, string(ns))
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	slices.Sort(out)
	return out, nil
}
