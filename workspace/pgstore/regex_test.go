package pgstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/agentctx/agentctx/internal/testkit/pgtest"
	"github.com/agentctx/agentctx/workspace"
	"github.com/agentctx/agentctx/workspace/driver"
	"github.com/agentctx/agentctx/workspace/storetest"
)

var (
	server   *pgtest.Server
	startErr error
)

func TestMain(m *testing.M) {
	if storetest.Child() { // a child of RunProcesses uses the parent's database
		os.Exit(m.Run())
	}
	server, startErr = pgtest.Start(context.Background(), pgtest.Options{})
	code := m.Run()
	if server != nil {
		server.Close()
	}
	os.Exit(code)
}

// FreshURL returns the URL of a fresh database on the server the tests
// share, or skips the test (fails it in CI) when there is none. The
// package's external tests use it too.
func FreshURL(t testing.TB) string { return newURL(t) }

// MigratedURL returns the URL of a fresh database with the store's tables
// in place (a copy of one a store was opened on), as a store's second
// opening finds it: the conformance rules each get one without paying
// the migrations every time.
func MigratedURL(t testing.TB) string {
	t.Helper()
	if startErr != nil {
		pgtest.Skip(t, startErr)
	}
	ctx := context.Background()
	tmpl, err := server.Template(ctx, "pgstore", func(ctx context.Context, u string) error {
		s, err := Open(ctx, u, Options{})
		if err != nil {
			return err
		}
		return s.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
	u, err := server.NewDatabaseFrom(ctx, tmpl)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func newURL(t testing.TB) string {
	t.Helper()
	if startErr != nil {
		pgtest.Skip(t, startErr)
	}
	u, err := server.NewDatabase(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestPGRegexTranslation(t *testing.T) {
	cases := []struct {
		pattern string
		fold    bool
		want    string // "" when there is no translation
	}{
		{"needle", false, `(?n)needle`},
		{"a.b", false, `(?n)(?:a.b)`},
		{"^x$", false, `(?n)(?:^x\r?$)`},
		{"ok", true, `(?n)[Oo][Kk\u212a]`},
		{`[a-c]\d`, false, `(?n)(?:[a-c][0-9])`},
		{`\bword\b`, false, `(?n)(?:(?:)word(?:))`},
		{`a{2,300}`, false, `(?n)(?:a){2,}`},
		{`x|y+`, false, `(?n)(?:x|(?:y)+)`},
		{`é😀`, false, `(?n)\u00e9\U0001f600`},
		{`[^\x00-\x{10FFFF}]`, false, ""},
		{`(`, false, ""},
	}
	for _, c := range cases {
		got, ok := pgRegex(c.pattern, c.fold)
		if !ok {
			got = ""
		}
		if got != c.want {
			t.Errorf("pgRegex(%q, %v) = %q, want %q", c.pattern, c.fold, got, c.want)
		}
	}
}

// TestPGRegexNeverMisses checks the prefilter's promise on the server:
// wherever RE2 matches a line, the translated expression matches the
// chunk that holds it. Patterns and lines are random, over an alphabet of
// the characters that differ between the two engines.
func TestPGRegexNeverMisses(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, newURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "b", "k", "K", "\u212a", "s", "S", "ſ", "é", "É", " ", ".", "-", "_", "1", "\t", "😀", "\\", "[", "x"}
	atoms := []string{"a", "b", "k", "s", "é", ".", `\.`, `\d`, `\w`, `\s`, `\S`, `\W`, `[a-k]`, `[^a]`, `[[:alpha:]]`, `\pL`, `\b`, `\B`, "^", "$", "😀", `\\`, `\[`, `x`}
	pattern := func() string {
		var b strings.Builder
		for range 1 + rng.IntN(4) {
			a := atoms[rng.IntN(len(atoms))]
			switch rng.IntN(7) {
			case 0:
				a += "*"
			case 1:
				a += "+"
			case 2:
				a += "?"
			case 3:
				a = "(" + a + "|" + atoms[rng.IntN(len(atoms))] + ")"
			case 4:
				a += fmt.Sprintf("{%d,%d}", rng.IntN(2), 1+rng.IntN(2))
			}
			b.WriteString(a)
		}
		return b.String()
	}
	lines := make([]string, 300)
	for i := range lines {
		var b strings.Builder
		for range rng.IntN(8) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		lines[i] = b.String()
	}
	// Each line inside a chunk, between two others, with a CRLF ending.
	chunks := make([]string, len(lines))
	for i, l := range lines {
		chunks[i] = "before\n" + l + "\r\nafter\n"
	}
	checked := 0
	for i := range 400 {
		p, fold := pattern(), i%3 == 0
		q := workspace.GrepQuery{Pattern: p, IgnoreCase: fold}
		re, err := q.Compile()
		if err != nil {
			continue
		}
		pg, ok := pgRegex(p, fold)
		if !ok {
			continue
		}
		rows, err := conn.Query(ctx, `SELECT i::int - 1 FROM unnest($1::text[]) WITH ORDINALITY AS t (c, i) WHERE NOT c ~ $2`, chunks, pg)
		if err != nil {
			t.Errorf("pattern %q → %q: %v", p, pg, err)
			continue
		}
		missed, err := pgx.CollectRows(rows, pgx.RowTo[int])
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range missed {
			if re.MatchString(lines[j]) {
				t.Errorf("pattern %q (ignore case %v) matches line %q; the server's %q does not", p, fold, lines[j], pg)
			}
		}
		checked++
	}
	if checked < 300 {
		t.Errorf("only %d patterns checked", checked)
	}
}

// TestGrepPrefilter checks that the server rules out the artifacts that
// cannot match, and only those.
func TestGrepPrefilter(t *testing.T) {
	ctx := context.Background()
	s, err := open(ctx, newURL(t), Options{ChunkBytes: 32})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	put := func(id, content string) {
		if _, err := s.Put(ctx, "ns", driver.Measure(workspace.Artifact{Info: workspace.Info{ID: id}, Content: content})); err != nil { // measured, as the portable store hands it to the driver
			t.Fatal(err)
		}
	}
	put("hit", "nothing here\nthe NEEDLE line\nmore\n")
	put("miss", "nothing\nat all\n")
	put("crlf", "x\r\nends with needle\r\n")
	put("bytes", "needle \xff not UTF-8\n")
	put("long", strings.Repeat("z", 40)+"needle\n") // a line longer than a chunk
	cases := []struct {
		q        workspace.GrepQuery
		hits     string
		ruledOut int64
	}{
		{workspace.GrepQuery{Pattern: "needle$"}, "crlf long", 2}, // bytes and long are not searchable on the server
		{workspace.GrepQuery{Pattern: "needle", IgnoreCase: true}, "bytes crlf hit long", 1},
		{workspace.GrepQuery{Pattern: "absent"}, "", 3},
		{workspace.GrepQuery{ID: "miss", Pattern: "needle"}, "", 1},
		{workspace.GrepQuery{ID: "hit", Pattern: "NEEDLE"}, "hit", 0},
	}
	if !s.trgm && os.Getenv(pgtest.EnvURL) == "" {
		t.Error("the Debian postgresql package has pg_trgm, but Open made no trigram index")
	}
	for i, c := range append(cases, cases...) {
		s.trgm = i < len(cases) // then the same without the trigram index
		before := s.ruledOut.Load()
		res, err := s.Grep(ctx, "ns", c.q)
		if err != nil {
			t.Fatal(err)
		}
		var hits []string
		for _, h := range res.Hits {
			hits = append(hits, h.ID)
		}
		if got := strings.Join(hits, " "); got != c.hits || s.ruledOut.Load()-before != c.ruledOut {
			t.Errorf("Grep(%+v) (trigram index %v): hits %q ruled out %d, want %q %d", c.q, s.trgm, got, s.ruledOut.Load()-before, c.hits, c.ruledOut)
		}
		if c.q.ID == "miss" && res.Lines != 2 {
			t.Errorf("an artifact ruled out counts its lines as searched: %+v", res)
		}
	}
}
