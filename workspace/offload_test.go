package workspace_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/workspace"
	"github.com/agentctx/agentctx/workspace/dirstore"
	"github.com/agentctx/agentctx/workspace/memstore"
	"github.com/agentctx/agentctx/workspace/sqlitestore"
)

var (
	ctx   = context.Background()
	clock = time.Date(2026, 11, 22, 7, 14, 0, 0, time.UTC)
)

func now() time.Time { return clock }

// backends returns a fresh store of every kind.
func backends(t *testing.T) map[string]workspace.Store {
	t.Helper()
	ds, err := dirstore.Open(filepath.Join(t.TempDir(), "ws"), dirstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ss, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "ws.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	return map[string]workspace.Store{"mem": memstore.New(), "dir": ds, "sqlite": ss}
}

// anthropic returns a history with one tool call per result content, in
// the Anthropic shape.
func anthropic(t testing.TB, tool string, input string, results ...agentctx.Content) []agentctx.Message {
	t.Helper()
	var calls, answers []agentctx.Block
	for i, c := range results {
		id := fmt.Sprintf("toolu_%02d", i+1)
		calls = append(calls, agentctx.ToolUseBlock(id, tool, json.RawMessage(input)))
		answers = append(answers, agentctx.ToolResultBlock(id, c, false))
	}
	return []agentctx.Message{
		agentctx.NewMessage(agentctx.RoleUser, agentctx.Text("run it")),
		agentctx.NewMessage(agentctx.RoleAssistant, agentctx.BlockList(calls...)),
		agentctx.NewMessage(agentctx.RoleUser, agentctx.BlockList(answers...)),
	}
}

func mustJSON(t testing.TB, msgs []agentctx.Message) string {
	t.Helper()
	b, err := agentctx.MarshalMessages(msgs)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func resultContent(msgs []agentctx.Message) []agentctx.Content {
	var out []agentctx.Content
	for r := range agentctx.ToolResults(msgs) {
		out = append(out, r.Content)
	}
	return out
}

func lines(n, width int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		line := fmt.Sprintf("line %d ", i)
		b.WriteString(line + strings.Repeat("x", max(width-len(line)-1, 0)) + "\n")
	}
	return b.String()
}

// TestOffloadBoundary: seed 003 §2.1 — content under 40K characters is
// returned whole; 40K or more becomes a <knowledge_list> entry. Characters
// are code points (SPEC §1), on every backend.
func TestOffloadBoundary(t *testing.T) {
	cases := []struct {
		name    string
		content string
		indexed bool
	}{
		{"empty", "", false},
		{"small", "ok", false},
		{"39999 ascii", strings.Repeat("a", 39_999), false},
		{"40000 ascii", strings.Repeat("a", 40_000), true},
		{"40001 ascii", strings.Repeat("a", 40_001), true},
		{"39999 two-byte characters", strings.Repeat("é", 39_999), false},
		{"40000 two-byte characters", strings.Repeat("é", 40_000), true},
		{"39999 in lines", lines(1000, 40)[:39_999], false},
		{"40000 in lines", lines(1000, 40), true},
		{"large log", lines(20_000, 80), true},
	}
	for name, store := range backends(t) {
		t.Run(name, func(t *testing.T) {
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					// One namespace per case: the same call id with other
					// content would take a suffixed id in one namespace.
					ws := workspace.New(store, workspace.Options{Now: now, Namespace: "n-" + c.name, SessionID: "s1"})
					msgs := anthropic(t, "bash", `{"command":"cat big.log"}`, agentctx.Text(c.content))
					before := mustJSON(t, msgs)
					res, err := ws.Offload(ctx, msgs)
					if err != nil {
						t.Fatal(err)
					}
					if mustJSON(t, msgs) != before {
						t.Fatal("Offload modified its input")
					}
					if len(res.Artifacts) != 1 || res.Artifacts[0].Indexed != c.indexed {
						t.Fatalf("artifacts = %+v, want one with indexed %v", res.Artifacts, c.indexed)
					}
					if c.indexed && (res.Indexed != 1 || res.Inlined != 0) || !c.indexed && (res.Indexed != 0 || res.Inlined != 1) {
						t.Errorf("inlined %d indexed %d", res.Inlined, res.Indexed)
					}
					a, err := ws.Get(ctx, "tool_result_toolu_01")
					if err != nil {
						t.Fatal(err)
					}
					if a.Content != c.content || a.Chars != utf8.RuneCountInString(c.content) {
						t.Errorf("stored content differs (%d chars)", a.Chars)
					}
					got := resultContent(res.Messages)[0]
					if !c.indexed {
						if !got.Equal(agentctx.Text(c.content)) {
							t.Errorf("inline result changed")
						}
						if mustJSON(t, res.Messages) != before {
							t.Errorf("messages changed although nothing was indexed")
						}
						return
					}
					text := got.Text()
					for _, want := range []string{
						"<knowledge_list>\n<knowledge id=\"tool_result_toolu_01\"",
						`tool_name="bash"`, fmt.Sprintf(`chars="%d"`, a.Chars), fmt.Sprintf(`lines="%d"`, a.Lines),
						"get_knowledge_by_id", "get_knowledge_by_lines", "grep_knowledge", "</knowledge_list>",
					} {
						if !strings.Contains(text, want) {
							t.Errorf("replacement lacks %q:\n%s", want, text)
						}
					}
					if n := utf8.RuneCountInString(text); n > 2_000 {
						t.Errorf("replacement is %d characters", n)
					}
				})
			}
		})
	}
}

func TestOffloadMetadata(t *testing.T) {
	store := memstore.New()
	ws := workspace.New(store, workspace.Options{
		Namespace: "proj", AgentID: "coder", TaskID: "t1", SessionID: "s1", Now: now,
		Metadata: workspace.Metadata{"team": "infra", workspace.KeyContextType: "overridden?"},
	})
	// OpenAI shape: tool_calls and role "tool" messages.
	doc, err := agentctx.ParseDocument(ctx, []byte(`[
		{"role":"user","content":"hi"},
		{"role":"assistant","content":null,"tool_calls":[
			{"id":"call_a","type":"function","function":{"name":"computer","arguments":"{\"action\":\"screenshot\"}"}},
			{"id":"call_b","type":"function","function":{"name":"str_replace_based_edit_tool","arguments":"{\"command\":\"view\",\"path\":\"/x\"}"}},
			{"id":"call_c","type":"function","function":{"name":"bash","arguments":"{\"command\":\"ls -la\"}"}}]},
		{"role":"tool","tool_call_id":"call_a","content":[{"type":"text","text":"done"}]},
		{"role":"tool","tool_call_id":"call_b","content":"file body"},
		{"role":"tool","tool_call_id":"call_c","content":"total 0"}
	]`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := ws.Offload(ctx, doc.Messages)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		id, tool, action string
		typ              workspace.ArtifactType
		content          string
		msg              int
	}{
		{"call_a", "computer", "screenshot", workspace.TypeText, "done", 2}, // text blocks are stored as text
		{"call_b", "str_replace_based_edit_tool", "view", workspace.TypeText, "file body", 3},
		{"call_c", "bash", "", workspace.TypeText, "total 0", 4},
	}
	if len(res.Artifacts) != len(want) {
		t.Fatalf("artifacts: %+v", res.Artifacts)
	}
	for i, w := range want {
		off := res.Artifacts[i]
		if off.Message != w.msg || off.Block != -1 || off.ID != "tool_result_"+w.id {
			t.Errorf("artifact %d located at %d/%d id %q", i, off.Message, off.Block, off.ID)
		}
		a, err := store.Get(ctx, ws.Namespace(), "tool_result_"+w.id)
		if err != nil {
			t.Fatal(err)
		}
		wantMD := workspace.Metadata{
			"context_type": "tool_result", "biz_id": w.id, "agent_id": "coder", "task_id": "t1", "session_id": "s1",
			"tool_name": w.tool, "action_name": w.action, "team": "infra",
		}
		if w.id == "call_a" {
			wantMD["text_blocks"] = "4"
			wantMD["text_template"] = `[{"type":"text","text":""}]`
		}
		if fmt.Sprint(a.Metadata) != fmt.Sprint(wantMD) {
			t.Errorf("%s metadata:\n got %v\nwant %v", w.id, a.Metadata, wantMD)
		}
		if a.Type != w.typ || a.Content != w.content || !a.Created.Equal(clock) {
			t.Errorf("%s: type %s content %q created %v", w.id, a.Type, a.Content, a.Created)
		}
	}
	// query_artifacts with the seed's filter.
	list, err := store.Query(ctx, ws.Namespace(), workspace.Filter{Metadata: workspace.Metadata{"context_type": "tool_result", "biz_id": "call_b"}})
	if err != nil || len(list) != 1 || list[0].ID != "tool_result_call_b" {
		t.Errorf("query by biz_id: %v %v", list, err)
	}
	if list, _ := store.Query(ctx, workspace.DefaultNamespace, workspace.Filter{}); len(list) != 0 {
		t.Errorf("artifacts leaked into the default namespace: %v", list)
	}
}

// countingStore counts the writes that reach a store (Put and Create).
type countingStore struct {
	workspace.Store
	mu   sync.Mutex
	puts int
	fail error
}

func (c *countingStore) Put(ctx context.Context, ns string, a workspace.Artifact) (workspace.Info, error) {
	c.mu.Lock()
	c.puts++
	fail := c.fail
	c.mu.Unlock()
	if fail != nil {
		return workspace.Info{}, fail
	}
	return c.Store.Put(ctx, ns, a)
}

func (c *countingStore) Create(ctx context.Context, ns string, a workspace.Artifact) (workspace.Info, error) {
	c.mu.Lock()
	c.puts++
	fail := c.fail
	c.mu.Unlock()
	if fail != nil {
		return workspace.Info{}, fail
	}
	return c.Store.Create(ctx, ns, a)
}

func TestOffloadAgainWritesNothing(t *testing.T) {
	store := &countingStore{Store: memstore.New()}
	t1 := clock
	ws := workspace.New(store, workspace.Options{Now: func() time.Time { return t1 }})
	msgs := anthropic(t, "bash", `{}`, agentctx.Text("small"), agentctx.Text(lines(2000, 50)))
	res, err := ws.Offload(ctx, msgs)
	if err != nil || store.puts != 2 || res.Indexed != 1 || res.Inlined != 1 {
		t.Fatalf("first offload: puts %d, %+v, %v", store.puts, res, err)
	}
	t1 = clock.Add(time.Hour)
	again, err := ws.Offload(ctx, res.Messages)
	if err != nil {
		t.Fatal(err)
	}
	if store.puts != 2 {
		t.Errorf("second offload wrote %d times", store.puts-2)
	}
	if mustJSON(t, again.Messages) != mustJSON(t, res.Messages) {
		t.Errorf("second offload changed the messages")
	}
	if len(again.Artifacts) != 1 || !again.Artifacts[0].Unchanged || again.Inlined != 1 || again.Indexed != 0 {
		t.Errorf("second offload: %+v", again)
	}
	a, _ := ws.Get(ctx, "tool_result_toolu_02")
	if !strings.HasPrefix(a.Content, "line 1 ") || !a.Created.Equal(clock) {
		t.Errorf("the large artifact was overwritten by its reference or re-created: %.40q %v", a.Content, a.Created)
	}
	// A grown history: only the new result is written.
	grown := append(append([]agentctx.Message(nil), again.Messages...),
		agentctx.NewMessage(agentctx.RoleAssistant, agentctx.BlockList(agentctx.ToolUseBlock("toolu_03", "bash", json.RawMessage(`{}`)))),
		agentctx.NewMessage(agentctx.RoleUser, agentctx.BlockList(agentctx.ToolResultBlock("toolu_03", agentctx.Text("new"), false))))
	if _, err := ws.Offload(ctx, grown); err != nil || store.puts != 3 {
		t.Errorf("grown history: puts %d, %v", store.puts, err)
	}
}

func TestOffloadChangedResultIsNotOverwritten(t *testing.T) {
	ws := workspace.New(memstore.New(), workspace.Options{Now: now})
	if _, err := ws.Offload(ctx, anthropic(t, "bash", `{}`, agentctx.Text("v1"))); err != nil {
		t.Fatal(err)
	}
	res, err := ws.Offload(ctx, anthropic(t, "bash", `{}`, agentctx.Text("v2")))
	if err != nil || res.Artifacts[0].Unchanged || res.Artifacts[0].ID != "tool_result_toolu_01-2" {
		t.Fatalf("%+v %v", res, err)
	}
	for id, want := range map[string]string{"tool_result_toolu_01": "v1", "tool_result_toolu_01-2": "v2"} {
		if a, err := ws.Get(ctx, id); err != nil || a.Content != want {
			t.Errorf("%s = %v, %v; want %q", id, a, err, want)
		}
	}
	again, err := ws.Offload(ctx, anthropic(t, "bash", `{}`, agentctx.Text("v2")))
	if err != nil || !again.Artifacts[0].Unchanged || again.Artifacts[0].ID != "tool_result_toolu_01-2" {
		t.Fatalf("same content again: %+v %v", again.Artifacts, err)
	}
}

func TestOffloadReusedIDKeepsBoth(t *testing.T) {
	ws := workspace.New(memstore.New(), workspace.Options{Now: now})
	msgs := []agentctx.Message{
		agentctx.NewMessage(agentctx.RoleAssistant, agentctx.BlockList(agentctx.ToolUseBlock("dup", "bash", nil))),
		agentctx.NewMessage(agentctx.RoleUser, agentctx.BlockList(
			agentctx.ToolResultBlock("dup", agentctx.Text(strings.Repeat("1", 50_000)), false),
			agentctx.ToolResultBlock("dup", agentctx.Text(strings.Repeat("2", 50_000)), false))),
	}
	res, err := ws.Offload(ctx, msgs)
	if err != nil {
		t.Fatal(err)
	}
	got := resultContent(res.Messages)
	if !strings.Contains(got[0].Text(), `id="tool_result_dup"`) || !strings.Contains(got[1].Text(), `id="tool_result_dup-2"`) {
		t.Errorf("references:\n%s\n%s", got[0].Text(), got[1].Text())
	}
	for id, want := range map[string]string{"tool_result_dup": strings.Repeat("1", 50_000), "tool_result_dup-2": strings.Repeat("2", 50_000)} {
		if a, err := ws.Get(ctx, id); err != nil || a.Content != want {
			t.Errorf("%s was not kept whole: %v", id, err)
		}
	}
}

// Every session's artifacts share the namespace: the same tool call id with
// other content in another session takes a suffixed id, the reference names
// it, and any reader of the namespace, with or without a session, resolves
// each reference to its own content (SPEC §10).
func TestOffloadSessionsShareTheNamespace(t *testing.T) {
	store := memstore.New()
	refs := map[string]string{} // artifact id named in the reference -> content
	for _, sess := range []string{"s1", "s2"} {
		content := sess + " output " + strings.Repeat("x", 50_000)
		ws := workspace.New(store, workspace.Options{Now: now, SessionID: sess})
		res, err := ws.Offload(ctx, anthropic(t, "bash", `{}`, agentctx.Text(content)))
		if err != nil {
			t.Fatal(err)
		}
		id := res.Artifacts[0].ID
		if !strings.Contains(resultContent(res.Messages)[0].Text(), "<knowledge id=\""+id+"\"") {
			t.Errorf("session %s: the reference does not name %s", sess, id)
		}
		refs[id] = content
	}
	if len(refs) != 2 || refs["tool_result_toolu_01"] == "" || refs["tool_result_toolu_01-2"] == "" {
		t.Fatalf("the two sessions' results got the ids %v, want tool_result_toolu_01 and tool_result_toolu_01-2", slices.Collect(maps.Keys(refs)))
	}
	for _, reader := range []string{"", "s1", "s2", "s3"} {
		ws := workspace.New(store, workspace.Options{SessionID: reader, MaxChars: workspace.NoLimit})
		for id, want := range refs {
			if reader == "s2" && id == "tool_result_toolu_01" {
				want = refs["tool_result_toolu_01-2"] // within s2, the plain id names s2's result
			}
			got, err := ws.GetKnowledgeByID(ctx, id, 0)
			if err != nil || got != want {
				t.Errorf("reader with session %q: %s reads %.20q, %v; want %.20q", reader, id, got, err, want)
			}
		}
	}
}

func TestTextBlocksStayText(t *testing.T) {
	cases := []struct {
		name    string
		content agentctx.Content
		typ     workspace.ArtifactType
		stored  string
	}{
		{"one block", agentctx.BlockList(agentctx.TextBlock("line 1\nline 2\nline 3")), workspace.TypeText, "line 1\nline 2\nline 3"},
		{"two blocks", agentctx.BlockList(agentctx.TextBlock("a\nb"), agentctx.TextBlock("")), workspace.TypeText, "a\nb\n"},
		{"other members and order kept", mustContent(t, `[{"text":"x\ny","cache_control":{"type":"ephemeral"},"type":"text"}]`), workspace.TypeText, "x\ny"},
		{"image kept as JSON", mustContent(t, `[{"type":"text","text":"x"},{"type":"image","source":{}}]`), workspace.TypeJSON, `[{"type":"text","text":"x"},{"type":"image","source":{}}]`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ws := workspace.New(memstore.New(), workspace.Options{Now: now})
			_, off, err := ws.OffloadToolResult(ctx, workspace.ToolCall{ID: "t1", Name: "Read"}, c.content)
			if err != nil {
				t.Fatal(err)
			}
			a, err := ws.Get(ctx, off.ID)
			if err != nil || a.Type != c.typ || a.Content != c.stored {
				t.Fatalf("stored %q (%s), %v; want %q (%s)", a.Content, a.Type, err, c.stored, c.typ)
			}
			orig, err := workspace.OriginalContent(a)
			if err != nil || orig.AsText() != c.content.AsText() {
				t.Fatalf("OriginalContent = %s, %v; want %s", orig.AsText(), err, c.content.AsText())
			}
			if c.typ == workspace.TypeText {
				lines, err := ws.GetKnowledgeByLines(ctx, off.ID, 1, 2)
				if err != nil || !strings.HasPrefix(lines, "Lines 1-") || strings.Contains(lines, `"type"`) {
					t.Errorf("lines read JSON: %q %v", lines, err)
				}
			}
		})
	}
}

func mustContent(t *testing.T, js string) agentctx.Content {
	t.Helper()
	var c agentctx.Content
	if err := c.UnmarshalJSON([]byte(js)); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestOffloadErrors(t *testing.T) {
	ws := workspace.New(memstore.New(), workspace.Options{})
	msgs := []agentctx.Message{agentctx.NewMessage(agentctx.RoleUser, agentctx.BlockList(agentctx.ToolResultBlock("", agentctx.Text("x"), false)))}
	if _, err := ws.Offload(ctx, msgs); !errors.Is(err, workspace.ErrInvalidID) {
		t.Errorf("empty id: %v", err)
	}
	disk := errors.New("disk full")
	ws = workspace.New(&countingStore{Store: memstore.New(), fail: disk}, workspace.Options{})
	if _, err := ws.Offload(ctx, anthropic(t, "bash", `{}`, agentctx.Text("x"))); !errors.Is(err, disk) {
		t.Errorf("store failure: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	ws = workspace.New(memstore.New(), workspace.Options{})
	if _, err := ws.Offload(cctx, anthropic(t, "bash", `{}`, agentctx.Text("x"))); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	res, err := ws.Offload(ctx, nil)
	if err != nil || len(res.Messages) != 0 || len(res.Artifacts) != 0 {
		t.Errorf("empty list: %+v %v", res, err)
	}
}

func TestOffloadLogsContextTypeAndBizID(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ws := workspace.New(memstore.New(), workspace.Options{Logger: logger, Now: now})
	if _, err := ws.Offload(ctx, anthropic(t, "bash", `{}`, agentctx.Text(strings.Repeat("z", 40_000)))); err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatalf("log: %v\n%s", err, buf.String())
	}
	if rec["context_type"] != "tool_result" || rec["biz_id"] != "toolu_01" || rec["artifact_id"] != "tool_result_toolu_01" || rec["indexed"] != true {
		t.Errorf("log record: %v", rec)
	}
}

func TestKnowledgeListPreview(t *testing.T) {
	ws := workspace.New(memstore.New(), workspace.Options{Now: now})
	cases := []struct {
		name    string
		content string
		want    []string
		notWant []string
	}{
		{"many lines", lines(1000, 50), []string{
			"<head>\nline 1 x", "line 5 x", "</head>\n[... 992 lines not shown ...]\n<tail>\nline 998 x", "line 1000 x", "</tail>",
			`chars="50000" lines="1000"`},
			[]string{"line 6 x", "line 997 x"}},
		{"one long line", strings.Repeat("abc", 20_000), []string{"<head>\nabcabc", "…\n</head>", `lines="1"`}, []string{"<tail>"}},
		{"few long lines", strings.Repeat(strings.Repeat("q", 9_000)+"\n", 6), []string{"<head>\nqqq", "…\n</head>", "<tail>\n…qqq", `lines="6"`}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, off, err := ws.OffloadToolResult(ctx, workspace.ToolCall{ID: c.name, Name: "bash"}, agentctx.Text(c.content))
			if err != nil || !off.Indexed {
				t.Fatal(off, err)
			}
			text := out.Text()
			for _, w := range c.want {
				if !strings.Contains(text, w) {
					t.Errorf("lacks %q:\n%s", w, text)
				}
			}
			for _, w := range c.notWant {
				if strings.Contains(text, w) {
					t.Errorf("has %q:\n%s", w, text)
				}
			}
			start := strings.Index(text, "<head>\n") + len("<head>\n")
			end := strings.Index(text, "<note>")
			pv := strings.NewReplacer("</head>\n", "", "<tail>\n", "", "</tail>\n", "", "\n", "").Replace(text[start:end])
			if n := utf8.RuneCountInString(pv); n > workspace.DefaultPreviewChars+60 {
				t.Errorf("preview is %d characters", n)
			}
		})
	}
	// Attribute values are escaped; the id in the note is a quoted string.
	out, _, err := ws.OffloadToolResult(ctx, workspace.ToolCall{ID: `a"<b>&`, Name: `t"x`}, agentctx.Text(strings.Repeat("y", 40_000)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.Text(), `<knowledge_list>`+"\n"+`<knowledge id="tool_result_a&quot;&lt;b&gt;&amp;" tool_name="t&quot;x"`) ||
		!strings.Contains(out.Text(), `get_knowledge_by_id(artifact_id="tool_result_a\"<b>&")`) {
		t.Errorf("escaping:\n%s", out.Text())
	}
}

func TestDefaultActionName(t *testing.T) {
	cases := map[string]string{
		`{"action":"left_click","coordinate":[1,2]}`: "left_click",
		`{"command":"view","path":"/a"}`:             "view",
		`{"command":"ls -la"}`:                       "",
		`{"command":["ls"]}`:                         "",
		`{"action":7}`:                               "",
		`not json`:                                   "",
		``:                                           "",
	}
	for in, want := range cases {
		if got := workspace.DefaultActionName(agentctx.ToolUse{Input: json.RawMessage(in)}); got != want {
			t.Errorf("%s: %q, want %q", in, got, want)
		}
	}
}
