package workspace_test

import (
	"encoding/json"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/workspace"
	"github.com/agentctx/agentctx/workspace/memstore"
)

// newWS returns a workspace holding the given artifacts (id → content) in
// session s1, on a memory store.
func newWS(t *testing.T, opts workspace.Options, contents map[string]string) *workspace.Workspace {
	t.Helper()
	opts.Now = now
	store := memstore.New()
	ws := workspace.New(store, opts)
	for id, c := range contents {
		md := workspace.Metadata{"context_type": "tool_result", "session_id": "s1", "biz_id": strings.TrimPrefix(id, "tool_result_"), "tool_name": "bash"}
		if strings.HasPrefix(id, "other_") {
			md["session_id"] = "s2"
		}
		if _, err := store.Put(ctx, ws.Namespace(), workspace.Artifact{Info: workspace.Info{ID: id, Metadata: md, Created: clock}, Content: c}); err != nil {
			t.Fatal(err)
		}
	}
	return ws
}

var noticeRE = regexp.MustCompile(`\n\n\[Read limit of [0-9,]+ characters reached: [^\n]*\]$`)

func TestGetKnowledgeByID(t *testing.T) {
	const capChars = 1_000
	big := lines(300, 20) // 6,000 characters
	longLine := strings.Repeat("0123456789", 500)
	crlf := strings.Repeat("windows line\r\n", 200)
	ws := newWS(t, workspace.Options{MaxChars: capChars}, map[string]string{
		"small": "exact\ncontent\r\n  with spaces  ", "at-cap": strings.Repeat("é", capChars), "over-cap": strings.Repeat("é", capChars+1),
		"big": big, "long-line": longLine, "crlf": crlf, "empty": "",
	})
	for _, id := range []string{"small", "at-cap", "empty"} {
		got, err := ws.GetKnowledgeByID(ctx, id, 0)
		a, _ := ws.Get(ctx, id)
		if err != nil || got != a.Content {
			t.Errorf("%s: under the cap the read must be the content byte for byte: %q %v", id, got, err)
		}
	}
	// Over the cap: cut, with a notice, within the cap; following the
	// notice's offset reads the whole content back exactly.
	for _, id := range []string{"over-cap", "big", "long-line", "crlf"} {
		a, _ := ws.Get(ctx, id)
		var rebuilt strings.Builder
		offset := 0
		for range 100 {
			got, err := ws.GetKnowledgeByID(ctx, id, offset)
			if err != nil {
				t.Fatalf("%s at %d: %v", id, offset, err)
			}
			if n := utf8.RuneCountInString(got); n > capChars {
				t.Errorf("%s at %d: %d characters, over the cap", id, offset, n)
			}
			loc := noticeRE.FindStringIndex(got)
			if loc == nil {
				rebuilt.WriteString(got)
				break
			}
			notice := got[loc[0]:]
			m := regexp.MustCompile(`offset=(\d+)\)`).FindStringSubmatch(notice)
			if m == nil {
				t.Fatalf("%s: notice without an offset: %s", id, notice)
			}
			next, _ := strconv.Atoi(m[1])
			part := string([]rune(a.Content)[offset:next])
			if shown := got[:loc[0]]; strings.TrimSuffix(strings.TrimSuffix(part, "\n"), "\r") != shown {
				t.Fatalf("%s at %d: shown part is not the content from offset to %d", id, offset, next)
			}
			rebuilt.WriteString(part)
			offset = next
		}
		if rebuilt.String() != a.Content {
			t.Errorf("%s: reading on from the notices does not give the content back", id)
		}
	}
	got, _ := ws.GetKnowledgeByID(ctx, "big", 0)
	if !strings.Contains(got, "(lines 1-") || !strings.Contains(got, `get_knowledge_by_lines(artifact_id="big", start_line=`) {
		t.Errorf("notice of a cut at a line end:\n%s", got[len(got)-400:])
	}
	got, _ = ws.GetKnowledgeByID(ctx, "long-line", 0)
	if !strings.Contains(got, "line 1 cut") || strings.Contains(got, "get_knowledge_by_lines") {
		t.Errorf("notice of a cut inside a line:\n%s", got[len(got)-300:])
	}
	for _, c := range []struct {
		id     string
		offset int
		want   error
	}{
		{"small", -1, workspace.ErrInvalidRange},
		{"small", 30, workspace.ErrInvalidRange},
		{"small", 1000, workspace.ErrInvalidRange},
		{"empty", 1, workspace.ErrInvalidRange},
		{"missing", 0, workspace.ErrNotFound},
	} {
		if _, err := ws.GetKnowledgeByID(ctx, c.id, c.offset); !errors.Is(err, c.want) {
			t.Errorf("%s offset %d: %v, want %v", c.id, c.offset, err, c.want)
		}
	}
	if got, err := ws.GetKnowledgeByID(ctx, "small", 29); err != nil || got != " " {
		t.Errorf("last character: %q %v", got, err)
	}
	unlimited := newWS(t, workspace.Options{MaxChars: workspace.NoLimit}, map[string]string{"big": big})
	if got, _ := unlimited.GetKnowledgeByID(ctx, "big", 0); got != big {
		t.Errorf("NoLimit cut the content")
	}
	def := newWS(t, workspace.Options{}, map[string]string{"a": strings.Repeat("a", 40_000), "b": strings.Repeat("a", 40_001)})
	if got, _ := def.GetKnowledgeByID(ctx, "a", 0); len(got) != 40_000 {
		t.Errorf("default cap: 40,000 characters must be read whole")
	}
	if got, _ := def.GetKnowledgeByID(ctx, "b", 0); !noticeRE.MatchString(got) || utf8.RuneCountInString(got) > 40_000 {
		t.Errorf("default cap: 40,001 characters must be cut")
	}
}

func TestGetKnowledgeByLines(t *testing.T) {
	ws := newWS(t, workspace.Options{MaxChars: 500}, map[string]string{
		"f": "l1\nl2\r\nl3\nl4\nl5\n", "big": lines(100, 20), "long": "short\n" + strings.Repeat("w", 2_000) + "\nafter\n",
	})
	ok := []struct {
		id         string
		start, end int
		want       string
	}{
		{"f", 1, 1, "Lines 1-1 of 5\nl1"},
		{"f", 2, 3, "Lines 2-3 of 5\nl2\nl3"},
		{"f", 4, 99, "Lines 4-5 of 5\nl4\nl5"},
		{"f", 5, 5, "Lines 5-5 of 5\nl5"},
	}
	for _, c := range ok {
		got, err := ws.GetKnowledgeByLines(ctx, c.id, c.start, c.end)
		if err != nil || got != c.want {
			t.Errorf("lines(%s, %d, %d) = %q, %v; want %q", c.id, c.start, c.end, got, err, c.want)
		}
	}
	for _, c := range []struct {
		start, end int
		msg        string
	}{
		{6, 6, "start line 6 is beyond the end (5 lines)"},
		{3, 2, "start line 3 is after end line 2"},
		{0, 2, "lines are numbered from 1"},
	} {
		_, err := ws.GetKnowledgeByLines(ctx, "f", c.start, c.end)
		if !errors.Is(err, workspace.ErrInvalidRange) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("lines(%d, %d): %v, want %q", c.start, c.end, err, c.msg)
		}
	}
	if _, err := ws.GetKnowledgeByLines(ctx, "nope", 1, 1); !errors.Is(err, workspace.ErrNotFound) {
		t.Errorf("missing: %v", err)
	}
	// Over the cap: the header names the lines shown and the notice the next call.
	got, err := ws.GetKnowledgeByLines(ctx, "big", 10, 90)
	if err != nil || utf8.RuneCountInString(got) > 500 {
		t.Fatalf("%d characters, %v", len(got), err)
	}
	m := regexp.MustCompile(`^Lines 10-(\d+) of 100\nline 10 x`).FindStringSubmatch(got)
	if m == nil {
		t.Fatalf("header:\n%s", got)
	}
	last, _ := strconv.Atoi(m[1])
	if !strings.Contains(got, "\nline "+m[1]+" x") || strings.Contains(got, "\nline "+strconv.Itoa(last+1)+" x") ||
		!strings.HasSuffix(got, "start_line="+strconv.Itoa(last+1)+", end_line=90).]") {
		t.Errorf("cut at line %d:\n%s", last, got)
	}
	// A single line over the cap is cut, and the notice gives its offset.
	got, err = ws.GetKnowledgeByLines(ctx, "long", 2, 3)
	if err != nil || !strings.HasPrefix(got, "Lines 2-2 of 3\nwww") || !strings.Contains(got, `offset=`) || utf8.RuneCountInString(got) > 500 {
		t.Fatalf("long line: %v\n%s", err, got)
	}
	off, _ := strconv.Atoi(regexp.MustCompile(`offset=(\d+)`).FindStringSubmatch(got)[1])
	shown := strings.Count(strings.SplitN(got, "\n", 3)[1], "w")
	if off != len("short\n")+shown || !strings.Contains(got, "start_line=3, end_line=3") {
		t.Errorf("offset %d, want %d:\n%s", off, len("short\n")+shown, got)
	}
}

func TestGrepKnowledge(t *testing.T) {
	var many strings.Builder
	for i := 1; i <= 150; i++ {
		many.WriteString("hit " + strconv.Itoa(i) + "\nmiss\n")
	}
	ws := newWS(t, workspace.Options{}, map[string]string{
		"log":  "alpha\nbeta ERROR one\ngamma\ndelta\nepsilon\nerror two\nzeta\neta\ntheta\niota\nkappa\nlambda error three\n",
		"many": many.String(),
	})
	cases := []struct {
		id, pattern string
		o           workspace.GrepOptions
		want        string
	}{
		{"log", "error", workspace.GrepOptions{}, "6:error two\n12:lambda error three"},
		{"log", "error", workspace.GrepOptions{IgnoreCase: true}, "2:beta ERROR one\n6:error two\n12:lambda error three"},
		{"log", "error", workspace.GrepOptions{IgnoreCase: true, Context: 1},
			"1-alpha\n2:beta ERROR one\n3-gamma\n--\n5-epsilon\n6:error two\n7-zeta\n--\n11-kappa\n12:lambda error three"},
		{"log", "^(gamma|delta)$", workspace.GrepOptions{Context: 1}, "2-beta ERROR one\n3:gamma\n4:delta\n5-epsilon"},
		{"log", "nothing", workspace.GrepOptions{}, `No lines of log match "nothing" (12 lines searched).`},
		{"many", "^hit", workspace.GrepOptions{MaxResults: 2}, "1:hit 1\n3:hit 2\n\n[Showing the first 2 of 150 matching lines (max_results=2). Narrow the pattern or raise max_results to see more.]"},
	}
	for _, c := range cases {
		got, err := ws.GrepKnowledge(ctx, c.id, c.pattern, c.o)
		if err != nil || got != c.want {
			t.Errorf("grep(%s, %q, %+v):\n got %q %v\nwant %q", c.id, c.pattern, c.o, got, err, c.want)
		}
	}
	got, _ := ws.GrepKnowledge(ctx, "many", "^hit", workspace.GrepOptions{})
	if strings.Count(got, ":hit ") != 100 || !strings.HasSuffix(got, "[Showing the first 100 of 150 matching lines (max_results=100). Narrow the pattern or raise max_results to see more.]") {
		t.Errorf("default cap of 100 results:\n%s", got[len(got)-200:])
	}
	got, _ = ws.GrepKnowledge(ctx, "many", "^hit", workspace.GrepOptions{MaxResults: -1})
	if strings.Count(got, ":hit ") != 150 || strings.Contains(got, "[Showing") {
		t.Errorf("no cap: %d results", strings.Count(got, ":hit "))
	}
	if _, err := ws.GrepKnowledge(ctx, "log", "(", workspace.GrepOptions{}); !errors.Is(err, workspace.ErrInvalidPattern) {
		t.Errorf("bad pattern: %v", err)
	}
	if _, err := ws.GrepKnowledge(ctx, "nope", "x", workspace.GrepOptions{}); !errors.Is(err, workspace.ErrNotFound) {
		t.Errorf("missing: %v", err)
	}
	small := newWS(t, workspace.Options{MaxChars: 600}, map[string]string{"many": many.String()})
	got, _ = small.GrepKnowledge(ctx, "many", "hit", workspace.GrepOptions{Context: 1})
	if utf8.RuneCountInString(got) > 600 || !strings.Contains(got, "[Read limit of 600 characters reached:") || !strings.HasSuffix(got, "to see more.]") {
		t.Errorf("grep over the cap:\n%s", got)
	}
}

func TestGrepSession(t *testing.T) {
	ws := newWS(t, workspace.Options{SessionID: "s1"}, map[string]string{
		"tool_result_a": "first\nneedle one\n", "tool_result_b": "needle two\n", "other_c": "needle elsewhere\n",
	})
	got, err := ws.GrepSession(ctx, "needle", workspace.SessionGrepOptions{})
	if want := "tool_result_a:2:needle one\ntool_result_b:1:needle two"; err != nil || got != want {
		t.Errorf("session s1:\n got %q %v\nwant %q", got, err, want)
	}
	got, _ = ws.GrepSession(ctx, "needle", workspace.SessionGrepOptions{GrepOptions: workspace.GrepOptions{Context: 1}})
	if want := "tool_result_a-1-first\ntool_result_a:2:needle one\n--\ntool_result_b:1:needle two"; got != want {
		t.Errorf("with context:\n got %q\nwant %q", got, want)
	}
	got, _ = ws.GrepSession(ctx, "needle", workspace.SessionGrepOptions{SessionID: "s2"})
	if got != "other_c:1:needle elsewhere" {
		t.Errorf("session s2: %q", got)
	}
	got, _ = ws.GrepSession(ctx, "absent", workspace.SessionGrepOptions{})
	if got != `No lines match "absent" in 2 offloaded tool results.` {
		t.Errorf("no match: %q", got)
	}
}

func TestQueryAndOffloadInfo(t *testing.T) {
	ws := newWS(t, workspace.Options{}, map[string]string{"tool_result_a": "x\ny\n", "tool_result_b": "z", "other_c": "w"})
	got, err := ws.QueryArtifacts(ctx, workspace.Filter{Metadata: workspace.Metadata{"session_id": "s1"}})
	if err != nil {
		t.Fatal(err)
	}
	var list []workspace.ArtifactSummary
	if err := json.Unmarshal([]byte(got), &list); err != nil || len(list) != 2 || list[0].ID != "tool_result_a" || list[0].Lines != 2 {
		t.Errorf("query_artifacts: %v\n%s", err, got)
	}
	got, _ = ws.ToolResultOffloadInfo(ctx, "", "s2")
	var info []workspace.OffloadEntry
	if err := json.Unmarshal([]byte(got), &info); err != nil || len(info) != 1 || info[0].ArtifactID != "other_c" || info[0].BizID != "other_c" || info[0].ToolName != "bash" {
		t.Errorf("offload info: %v\n%s", err, got)
	}
	if got, _ := ws.ToolResultOffloadInfo(ctx, "no-such-task", ""); got != "[]" {
		t.Errorf("empty: %q", got)
	}
	entries, err := workspace.OffloadInfo(ctx, ws.Store(), "default", "", "")
	if err != nil || len(entries) != 3 {
		t.Errorf("OffloadInfo: %v %v", entries, err)
	}
	small := newWS(t, workspace.Options{MaxChars: 500}, map[string]string{"a": "1", "b": "2", "c": "3", "d": "4", "e": "5"})
	got, _ = small.QueryArtifacts(ctx, workspace.Filter{})
	if !strings.Contains(got, "listed; narrow the filter or pass offset.]") || utf8.RuneCountInString(got) > 500 {
		t.Errorf("query over the cap:\n%s", got)
	}
	if err := json.Unmarshal([]byte(strings.SplitN(got, "\n\n[", 2)[0]), &list); err != nil {
		t.Errorf("the cut list is not JSON: %v", err)
	}
}

// A workspace without a session lists and searches every session's
// artifacts; one with a session lists its own unless a call names another.
func TestListingsCoverEverySession(t *testing.T) {
	store := memstore.New()
	for _, sess := range []string{"s1", "s2"} {
		ws := workspace.New(store, workspace.Options{Now: now, SessionID: sess})
		msgs := anthropic(t, "bash", `{}`, agentctx.Text("needle of "+sess+"\n"))
		if _, err := ws.Offload(ctx, msgs); err != nil {
			t.Fatal(err)
		}
	}
	ids := func(list string) string {
		var entries []workspace.OffloadEntry
		if err := json.Unmarshal([]byte(list), &entries); err != nil {
			t.Fatalf("%v: %s", err, list)
		}
		var out []string
		for _, e := range entries {
			out = append(out, e.ArtifactID+"@"+e.SessionID)
		}
		return strings.Join(out, " ")
	}
	queried := func(list string) string {
		var entries []workspace.ArtifactSummary
		if err := json.Unmarshal([]byte(list), &entries); err != nil {
			t.Fatalf("%v: %s", err, list)
		}
		var out []string
		for _, e := range entries {
			out = append(out, e.ID+"@"+e.Metadata["session_id"])
		}
		return strings.Join(out, " ")
	}
	all := workspace.New(store, workspace.Options{})
	s2 := workspace.New(store, workspace.Options{SessionID: "s2"})
	for _, c := range []struct {
		name string
		run  func() (string, error)
		want string
	}{
		{"offload info, no session", func() (string, error) { return all.ToolResultOffloadInfo(ctx, "", "") }, "tool_result_toolu_01@s1 tool_result_toolu_01-2@s2"},
		{"offload info, filter", func() (string, error) { return all.ToolResultOffloadInfo(ctx, "", "s2") }, "tool_result_toolu_01-2@s2"},
		{"offload info, own session", func() (string, error) { return s2.ToolResultOffloadInfo(ctx, "", "") }, "tool_result_toolu_01-2@s2"},
		{"offload info, other session", func() (string, error) { return s2.ToolResultOffloadInfo(ctx, "", "s1") }, "tool_result_toolu_01@s1"},
	} {
		got, err := c.run()
		if err != nil || ids(got) != c.want {
			t.Errorf("%s: %v %s, want %s", c.name, err, got, c.want)
		}
	}
	for _, c := range []struct {
		name string
		ws   *workspace.Workspace
		f    workspace.Metadata
		want string
	}{
		{"query, no session", all, nil, "tool_result_toolu_01@s1 tool_result_toolu_01-2@s2"},
		{"query, filter", all, workspace.Metadata{"session_id": "s1"}, "tool_result_toolu_01@s1"},
		{"query, own session", s2, workspace.Metadata{"context_type": "tool_result"}, "tool_result_toolu_01-2@s2"},
		{"query, other session", s2, workspace.Metadata{"session_id": "s1"}, "tool_result_toolu_01@s1"},
	} {
		got, err := c.ws.QueryArtifacts(ctx, workspace.Filter{Metadata: c.f})
		if err != nil || queried(got) != c.want {
			t.Errorf("%s: %v %s, want %s", c.name, err, got, c.want)
		}
	}
	if list, _ := s2.Query(ctx, workspace.Filter{}); len(list) != 2 {
		t.Errorf("Query of a session's workspace lists %d artifacts, want the namespace's 2", len(list))
	}
	got, err := all.GrepSession(ctx, "needle", workspace.SessionGrepOptions{})
	if want := "tool_result_toolu_01:1:needle of s1\ntool_result_toolu_01-2:1:needle of s2"; err != nil || got != want {
		t.Errorf("grep of every session: %q %v, want %q", got, err, want)
	}
	got, _ = s2.GrepSession(ctx, "needle", workspace.SessionGrepOptions{})
	if want := "tool_result_toolu_01-2:1:needle of s2"; got != want {
		t.Errorf("grep of the own session: %q, want %q", got, want)
	}
}

// Workspaces written before the flat layout kept a session's artifacts in
// SessionNamespace(ns, session): a workspace with that session still reads
// them by id, after a miss in the namespace.
func TestLegacySessionNamespaceReadByID(t *testing.T) {
	store := memstore.New()
	legacy := workspace.SessionNamespace("proj", "s/1")
	content := "old\nlayout ERROR\n"
	if _, err := store.Put(ctx, legacy, workspace.Artifact{Info: workspace.Info{ID: "tool_result_old", Created: clock,
		Metadata: workspace.Metadata{"context_type": "tool_result", "session_id": "s/1"}}, Content: content}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Put(ctx, "proj", workspace.Artifact{Info: workspace.Info{ID: "tool_result_new", Created: clock}, Content: "new\n"}); err != nil {
		t.Fatal(err)
	}
	ws := workspace.New(store, workspace.Options{Namespace: "proj", SessionID: "s/1"})
	if ws.Namespace() != "proj" || ws.BaseNamespace() != "proj" {
		t.Errorf("Namespace %q, BaseNamespace %q; want proj", ws.Namespace(), ws.BaseNamespace())
	}
	for name, read := range map[string]func() (string, error){
		"get":   func() (string, error) { return ws.GetKnowledgeByID(ctx, "tool_result_old", 0) },
		"lines": func() (string, error) { return ws.GetKnowledgeByLines(ctx, "tool_result_old", 2, 2) },
		"grep": func() (string, error) {
			return ws.GrepKnowledge(ctx, "tool_result_old", "ERROR", workspace.GrepOptions{})
		},
		"tool": func() (string, error) {
			return ws.Execute(ctx, "get_knowledge_by_id", json.RawMessage(`{"artifact_id":"tool_result_old"}`))
		},
	} {
		got, err := read()
		if err != nil || !strings.Contains(got, "layout ERROR") {
			t.Errorf("%s of a legacy artifact: %q %v", name, got, err)
		}
	}
	if a, err := ws.Get(ctx, "tool_result_new"); err != nil || a.Content != "new\n" {
		t.Errorf("Get of the namespace's artifact: %v", err)
	}
	// A miss in both names the namespace searched.
	_, err := ws.GetKnowledgeByID(ctx, "tool_result_none", 0)
	var we *workspace.Error
	if !errors.Is(err, workspace.ErrNotFound) || !errors.As(err, &we) || we.Namespace != "proj" {
		t.Errorf("miss: %v", err)
	}
	// Without the session, the legacy namespace is not searched.
	if _, err := workspace.New(store, workspace.Options{Namespace: "proj"}).GetKnowledgeByID(ctx, "tool_result_old", 0); !errors.Is(err, workspace.ErrNotFound) {
		t.Errorf("a workspace without the session read the legacy artifact: %v", err)
	}
}
