package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/mcpserver"
	"github.com/agentctx/agentctx/tokens"
	"github.com/agentctx/agentctx/workspace"
	"github.com/agentctx/agentctx/workspace/memstore"
)

func put(t *testing.T, store workspace.Store, ns, id, session, content string) {
	t.Helper()
	_, err := store.Put(t.Context(), ns, workspace.Artifact{
		Info: workspace.Info{ID: id, Metadata: workspace.Metadata{
			workspace.KeyContextType: workspace.ContextToolResult, workspace.KeySessionID: session,
			workspace.KeyBizID: strings.TrimPrefix(id, "tool_result_"), workspace.KeyToolName: "bash"}},
		Content: content,
	})
	if err != nil {
		t.Fatal(err)
	}
}

// connect runs srv over an in-memory transport and returns a client
// session of the official SDK's client.
func connect(t *testing.T, srv *mcpserver.Server) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	st, ct := mcp.NewInMemoryTransports()
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, st) }()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		cancel()
		<-done
	})
	return cs
}

func callText(t *testing.T, cs *mcp.ClientSession, name string, args any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("%s: %d content parts", name, len(res.Content))
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("%s: content %T", name, res.Content[0])
	}
	return tc.Text, res.IsError
}

func TestListTools(t *testing.T) {
	cs := connect(t, mcpserver.New(memstore.New(), mcpserver.Options{}))
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defs := map[string]workspace.ToolDefinition{}
	for _, d := range workspace.Tools() {
		defs[d.Name] = d
	}
	if len(res.Tools) != len(defs) {
		t.Fatalf("%d tools, want %d", len(res.Tools), len(defs))
	}
	for _, tool := range res.Tools {
		def, ok := defs[tool.Name]
		if !ok {
			t.Errorf("tool %q is not a workspace tool", tool.Name)
		}
		if tool.Meta[mcpserver.MetaAlwaysLoad] != true {
			t.Errorf("%s: _meta = %v, want anthropic/alwaysLoad true", tool.Name, tool.Meta)
		}
		if tool.Annotations == nil || !tool.Annotations.ReadOnlyHint {
			t.Errorf("%s: not read-only", tool.Name)
		}
		if !strings.Contains(tool.Description, "40,000 characters") {
			t.Errorf("%s: description does not state the page cap: %q", tool.Name, tool.Description)
		}
		schema, _ := json.Marshal(tool.InputSchema)
		var x, y any
		json.Unmarshal(schema, &x)
		json.Unmarshal(def.InputSchema, &y)
		if fmt.Sprint(x) != fmt.Sprint(y) {
			t.Errorf("%s: schema %s, want %s", tool.Name, schema, def.InputSchema)
		}
	}
}

func TestReadBack(t *testing.T) {
	store := memstore.New()
	original := "line one\nline two ERROR\nline three\n"
	put(t, store, "proj", "tool_result_a", "s1", original)
	put(t, store, "proj", "tool_result_b", "s2", "other ERROR\n")
	put(t, store, "default", "tool_result_c", "s1", "wrong namespace ERROR\n")
	cs := connect(t, mcpserver.New(store, mcpserver.Options{Namespace: "proj", SessionID: "s1"}))

	cases := []struct {
		name string
		args any
		want string
	}{
		{"get_knowledge_by_id", map[string]any{"artifact_id": "tool_result_a"}, original},
		{"get_knowledge_by_lines", map[string]any{"artifact_id": "tool_result_a", "start_line": 2, "end_line": 3}, "Lines 2-3 of 3\nline two ERROR\nline three"},
		{"grep_knowledge", map[string]any{"artifact_id": "tool_result_a", "pattern": "error", "ignore_case": true}, "2:line two ERROR"},
		// The session-wide tools cover the server's session unless told otherwise.
		{"grep_session_knowledge", map[string]any{"pattern": "ERROR"}, "tool_result_a:2:line two ERROR"},
		{"grep_session_knowledge", map[string]any{"pattern": "ERROR", "session_id": "s2"}, "tool_result_b:1:other ERROR"},
		// A read by id reaches every session of the namespace.
		{"get_knowledge_by_id", map[string]any{"artifact_id": "tool_result_b"}, "other ERROR\n"},
	}
	for _, c := range cases {
		got, isErr := callText(t, cs, c.name, c.args)
		if isErr || got != c.want {
			t.Errorf("%s(%v) = %q (error %v), want %q", c.name, c.args, got, isErr, c.want)
		}
	}
	list, _ := callText(t, cs, "get_tool_result_offload_info", nil)
	if !strings.Contains(list, `"tool_result_a"`) || strings.Contains(list, "tool_result_b") || strings.Contains(list, "tool_result_c") {
		t.Errorf("list for session s1:\n%s", list)
	}
	list, _ = callText(t, cs, "query_artifacts", map[string]any{"filter": map[string]string{"tool_name": "bash"}})
	if !strings.Contains(list, `"tool_result_a"`) || strings.Contains(list, "tool_result_b") {
		t.Errorf("query for session s1:\n%s", list)
	}
	list, _ = callText(t, cs, "query_artifacts", map[string]any{"filter": map[string]string{"session_id": "s2"}})
	if !strings.Contains(list, `"tool_result_b"`) || strings.Contains(list, "tool_result_a") {
		t.Errorf("query for session s2:\n%s", list)
	}

	// Errors are tool results marked as errors, written for the model.
	got, isErr := callText(t, cs, "get_knowledge_by_id", map[string]any{"id": "tool_result_a", "context": 1})
	if !isErr || !strings.HasPrefix(got, `Error: get_knowledge_by_id: invalid tool arguments: unknown argument`) {
		t.Errorf("bad arguments: %q %v", got, isErr)
	}
	got, isErr = callText(t, cs, "get_knowledge_by_id", map[string]any{"artifact_id": "tool_result_c"})
	if !isErr || !strings.Contains(got, "no artifact") {
		t.Errorf("other namespace: %q %v", got, isErr)
	}
	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "rm_rf", Arguments: map[string]any{}}); err == nil {
		t.Errorf("unknown tool: no protocol error")
	}
}

// TestNoSession: a server that names no session (as agentctx mcp is
// registered) reads and lists what a session-scoped Workspace stored (as
// the proxy and prepare --session do), without knowing the session.
func TestNoSession(t *testing.T) {
	ctx := t.Context()
	store := memstore.New()
	big := strings.Repeat("stored by a session ERROR\n", 2_000)
	ws := workspace.New(store, workspace.Options{SessionID: "3f2a-unknown-to-the-user"})
	ref, off, err := ws.OffloadToolResult(ctx, workspace.ToolCall{ID: "toolu_9", Name: "bash"}, agentctx.Text(big))
	if err != nil || !off.Indexed {
		t.Fatal(err, off.Indexed)
	}
	// A compaction archive, as the pipeline keeps it in its workspace.
	if _, err := store.Put(ctx, ws.Namespace(), workspace.Artifact{Info: workspace.Info{ID: "compact_0123456789abcdef",
		Metadata: workspace.Metadata{workspace.KeyContextType: "compaction_archive", workspace.KeySessionID: ws.SessionID()}}, Content: "[]"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ref.Text(), `"tool_result_toolu_9"`) {
		t.Fatalf("reference: %.200s", ref.Text())
	}
	cs := connect(t, mcpserver.New(store, mcpserver.Options{}))
	for _, c := range []struct {
		name string
		args any
		want string // a part of the result
	}{
		{"get_knowledge_by_id", map[string]any{"artifact_id": "tool_result_toolu_9"}, "stored by a session ERROR\nstored by"},
		{"get_knowledge_by_lines", map[string]any{"artifact_id": "tool_result_toolu_9", "start_line": 2, "end_line": 2}, "Lines 2-2 of 2000\nstored by a session ERROR"},
		{"grep_knowledge", map[string]any{"artifact_id": "tool_result_toolu_9", "pattern": "ERROR", "max_results": 1}, "1:stored by a session ERROR"},
		{"get_knowledge_by_id", map[string]any{"artifact_id": "compact_0123456789abcdef"}, "[]"},
		{"grep_session_knowledge", map[string]any{"pattern": "ERROR", "max_results": 1}, "tool_result_toolu_9:1:stored by a session ERROR"},
		{"get_tool_result_offload_info", nil, `"artifact_id":"tool_result_toolu_9"`},
		{"get_tool_result_offload_info", map[string]any{"session_id": "3f2a-unknown-to-the-user"}, `"artifact_id":"tool_result_toolu_9"`},
		{"query_artifacts", nil, `"id":"compact_0123456789abcdef"`},
	} {
		got, isErr := callText(t, cs, c.name, c.args)
		if isErr || !strings.Contains(got, c.want) {
			t.Errorf("%s(%v) = %.200q (error %v), want it to hold %q", c.name, c.args, got, isErr, c.want)
		}
	}
	if got, _ := callText(t, cs, "get_tool_result_offload_info", map[string]any{"session_id": "another"}); got != "[]" {
		t.Errorf("a session filter that matches nothing: %s", got)
	}
}

// TestPages reads large artifacts page by page, following the notices, and
// checks that every page is under both caps and that the pages put back
// together are the original.
func TestPages(t *testing.T) {
	store := memstore.New()
	var prose, dense strings.Builder
	for i := range 4000 {
		fmt.Fprintf(&prose, "line %d: the quick brown fox jumps over the lazy dog\n", i+1)
	}
	for i := range 3000 {
		// Hex and CJK: many tokens per character.
		fmt.Fprintf(&dense, "%x 数据块%d 的校验和不一致 %x\n", i*7919, i, i*104729)
	}
	put(t, store, "default", "tool_result_prose", "", prose.String())
	put(t, store, "default", "tool_result_dense", "", dense.String())
	const maxTokens = 8_000
	srv := mcpserver.New(store, mcpserver.Options{MaxTokens: maxTokens})
	cs := connect(t, srv)
	enc := tokens.O200kBase()
	for _, id := range []string{"tool_result_prose", "tool_result_dense"} {
		original := map[string]string{"tool_result_prose": prose.String(), "tool_result_dense": dense.String()}[id]
		var got strings.Builder
		runes := []rune(original)
		offset, pages := 0, 0
		for {
			args := map[string]any{"artifact_id": id}
			if offset > 0 {
				args["offset"] = offset
			}
			text, isErr := callText(t, cs, "get_knowledge_by_id", args)
			if isErr {
				t.Fatalf("%s offset %d: %s", id, offset, text)
			}
			pages++
			if n := utf8.RuneCountInString(text); n >= 40_000 || n > mcpserver.DefaultMaxChars {
				t.Errorf("%s page %d: %d characters", id, pages, n)
			}
			if n := enc.Count(text); n > maxTokens {
				t.Errorf("%s page %d: %d tokens", id, pages, n)
			}
			body, notice, cut := strings.Cut(text, "\n\n[Read limit of ")
			if !cut {
				got.WriteString(body)
				break
			}
			var next int
			i := strings.Index(notice, "offset=")
			if i < 0 {
				t.Fatalf("notice without offset: %s", notice)
			}
			fmt.Sscanf(notice[i+len("offset="):], "%d", &next)
			if next <= offset {
				t.Fatalf("no progress: %s", notice)
			}
			// The body is the characters up to next, without the last "\n".
			chunk := string(runes[offset:min(next, len(runes))])
			if strings.TrimSuffix(chunk, "\n") != body {
				t.Fatalf("%s page %d is not characters %d-%d", id, pages, offset, next)
			}
			got.WriteString(chunk)
			offset = next
		}
		if got.String() != original {
			t.Errorf("%s: %d pages put together differ from the original (%d vs %d bytes)", id, pages, got.Len(), len(original))
		}
		if pages < 2 {
			t.Errorf("%s read in %d page", id, pages)
		}
	}
}

func TestStreamableHTTP(t *testing.T) {
	store := memstore.New()
	put(t, store, "default", "tool_result_a", "", "hello\n")
	hs := httptest.NewServer(mcpserver.New(store, mcpserver.Options{}).Handler())
	defer hs.Close()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: hs.URL, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if got, isErr := callText(t, cs, "get_knowledge_by_id", map[string]any{"artifact_id": "tool_result_a"}); isErr || got != "hello\n" {
		t.Errorf("over HTTP: %q %v", got, isErr)
	}
}

func TestToolsJSON(t *testing.T) {
	b, err := json.Marshal(mcpserver.Tools(0))
	if err != nil {
		t.Fatal(err)
	}
	var tools []map[string]json.RawMessage
	if err := json.Unmarshal(b, &tools); err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools {
		if string(tool["_meta"]) != `{"anthropic/alwaysLoad":true}` || tool["inputSchema"] == nil || tool["name"] == nil {
			t.Errorf("MCP tool JSON: %s", b)
		}
	}
}

// TestReferenceTextNamesServedTools checks that every tool the model is
// told to call, in a <knowledge_list> reference and in the notices of capped
// reads, is a tool this server serves, under the same name.
func TestReferenceTextNamesServedTools(t *testing.T) {
	ctx := t.Context()
	store := memstore.New()
	ws := workspace.New(store, workspace.Options{MaxChars: 2_000})
	var big strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&big, "line %d ERROR something\n", i)
	}
	ref, _, err := ws.OffloadToolResult(ctx, workspace.ToolCall{ID: "toolu_1", Name: "bash"}, agentctx.Text(big.String()))
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{ref.Text()}
	for _, call := range []struct{ name, args string }{
		{"get_knowledge_by_id", `{"artifact_id":"tool_result_toolu_1"}`},
		{"get_knowledge_by_lines", `{"artifact_id":"tool_result_toolu_1","start_line":1,"end_line":3000}`},
		{"grep_knowledge", `{"artifact_id":"tool_result_toolu_1","pattern":"ERROR","max_results":1000}`},
		{"grep_session_knowledge", `{"pattern":"ERROR"}`},
		{"get_knowledge_by_id", `{"artifact_id":"tool_result_nope"}`},
	} {
		text, _ := ws.Execute(ctx, call.name, json.RawMessage(call.args))
		texts = append(texts, text)
	}
	served := map[string]bool{}
	for _, tool := range mcpserver.Tools(0) {
		served[tool.Name] = true
	}
	named := regexp.MustCompile(`\b([a-z]+(?:_[a-z]+)+)(?:\(|\b)`)
	seen := map[string]bool{}
	for _, text := range texts {
		for _, m := range named.FindAllStringSubmatch(text, -1) {
			name := m[1]
			if name != "knowledge_list" && (strings.Contains(name, "knowledge") || strings.HasPrefix(name, "get_") || strings.HasPrefix(name, "query_")) {
				seen[name] = true
				if !served[name] {
					t.Errorf("the model is told to call %q, which is not served:\n%.300s", name, text)
				}
			}
		}
	}
	for _, want := range []string{"get_knowledge_by_id", "get_knowledge_by_lines", "grep_knowledge", "get_tool_result_offload_info"} {
		if !seen[want] {
			t.Errorf("no text names %s", want)
		}
	}
}

// headerTransport adds a header to every request.
type headerTransport struct{ key, value string }

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(h.key, h.value)
	return http.DefaultTransport.RoundTrip(r)
}

// HandlerFor serves each client the namespace its request names, and no
// other: a shared proxy's tenants read only their own artifacts.
func TestHandlerForTenants(t *testing.T) {
	store := memstore.New()
	put(t, store, "default/tenants/a", "tool_result_x", "", "tenant a's output\n")
	put(t, store, "default/tenants/b", "tool_result_x", "", "tenant b's output\n")
	hs := httptest.NewServer(mcpserver.HandlerFor(store, mcpserver.Options{}, func(r *http.Request) (string, bool) {
		t := r.Header.Get("X-Tenant")
		return "default/tenants/" + t, t != ""
	}, 0))
	defer hs.Close()
	for _, tenant := range []string{"a", "b"} {
		client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
		cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: hs.URL, DisableStandaloneSSE: true,
			HTTPClient: &http.Client{Transport: headerTransport{"X-Tenant", tenant}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, isErr := callText(t, cs, "get_knowledge_by_id", map[string]any{"artifact_id": "tool_result_x"})
		cs.Close()
		if isErr || got != "tenant "+tenant+"'s output\n" {
			t.Errorf("tenant %s read %q", tenant, got)
		}
	}
	resp, err := http.Post(hs.URL, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a request naming no tenant: status %d, want 403", resp.StatusCode)
	}
}

// A server with a session reads that session's result by a plain id that
// two sessions hold (tool_result_call_0 of s1, tool_result_call_0-2 of
// s2): agentctx mcp --session s2 reads s2's (issue 48.5).
func TestSessionScopesReadByID(t *testing.T) {
	store := memstore.New()
	put(t, store, "default", "tool_result_call_0", "s1", "s1 output\n")
	// The second result of call_0, as OffloadToolResult stores it.
	if _, err := store.Put(t.Context(), "default", workspace.Artifact{Info: workspace.Info{ID: "tool_result_call_0-2", Metadata: workspace.Metadata{
		workspace.KeyContextType: workspace.ContextToolResult, workspace.KeySessionID: "s2", workspace.KeyBizID: "call_0"}}, Content: "s2 output\n"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		session, tool string
		args          map[string]any
		want          string
	}{
		{"s2", "get_knowledge_by_id", map[string]any{"artifact_id": "tool_result_call_0"}, "s2 output\n"},
		{"s1", "get_knowledge_by_id", map[string]any{"artifact_id": "tool_result_call_0"}, "s1 output\n"},
		{"s2", "get_knowledge_by_lines", map[string]any{"artifact_id": "tool_result_call_0", "start_line": 1, "end_line": 1}, "Lines 1-1 of 1\ns2 output"},
		{"s2", "grep_knowledge", map[string]any{"artifact_id": "tool_result_call_0", "pattern": "output"}, "1:s2 output"},
		{"", "get_knowledge_by_id", map[string]any{"artifact_id": "tool_result_call_0-2"}, "s2 output\n"},
	} {
		cs := connect(t, mcpserver.New(store, mcpserver.Options{SessionID: c.session}))
		if got, isErr := callText(t, cs, c.tool, c.args); isErr || got != c.want {
			t.Errorf("session %q: %s(%v) = %q (error %v), want %q", c.session, c.tool, c.args, got, isErr, c.want)
		}
	}
}

// TestOneCutEverywhere: a long read cuts at the same place over MCP as in
// the workspace's own tools (the request's read-back, `ws get`), and the
// tool definitions state the same cap.
func TestOneCutEverywhere(t *testing.T) {
	store := memstore.New()
	var b strings.Builder
	for i := 0; b.Len() < 60_000; i++ {
		fmt.Fprintf(&b, "line %d: go test ./... ok\n", i+1)
	}
	put(t, store, "default", "tool_result_long", "", b.String())
	args := json.RawMessage(`{"artifact_id":"tool_result_long"}`)
	viaMCP, err := mcpserver.New(store, mcpserver.Options{}).Call(t.Context(), "get_knowledge_by_id", args)
	if err != nil {
		t.Fatal(err)
	}
	direct, err := workspace.New(store, workspace.Options{}).Execute(t.Context(), "get_knowledge_by_id", args)
	if err != nil {
		t.Fatal(err)
	}
	if viaMCP != direct {
		t.Errorf("over MCP the read is %d characters, in the workspace's tools %d", len([]rune(viaMCP)), len([]rune(direct)))
	}
	mcpDefs := map[string]string{}
	for _, tool := range mcpserver.Tools(0) {
		mcpDefs[tool.Name] = tool.Description
	}
	for _, def := range workspace.Tools() {
		if mcpDefs[def.Name] != def.Description {
			t.Errorf("%s: over MCP described %q, in the request %q", def.Name, mcpDefs[def.Name], def.Description)
		}
	}
}
