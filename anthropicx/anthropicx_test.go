package anthropicx_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/anthropicx"
	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/pricing"
)

func newPipeline(t testing.TB) *pipeline.Pipeline {
	dir := t.TempDir()
	p, err := pipeline.New(pipeline.Options{
		SessionID:    "s1",
		WorkspaceDir: filepath.Join(dir, "ws"),
		Compact:      compact.Options{Dir: filepath.Join(dir, "archive")},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// observing is a pipeline that records the usage fed back.
type observing struct {
	*pipeline.Pipeline
	mu    sync.Mutex
	usage []pricing.Usage
}

func (o *observing) Observe(_ context.Context, u pricing.Usage) {
	o.mu.Lock()
	o.usage = append(o.usage, u)
	o.mu.Unlock()
}

// fakeAPI is a local Messages endpoint: it records the request bodies and
// answers with reply (JSON, or an event stream when the request streams).
type fakeAPI struct {
	mu     sync.Mutex
	bodies []string
	reply  func(req map[string]any) string
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.bodies = append(f.bodies, string(b))
	f.mu.Unlock()
	var req map[string]any
	json.Unmarshal(b, &req)
	if req["stream"] == true {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range []string{
			`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"usage":{"input_tokens":12,"cache_read_input_tokens":3000,"cache_creation_input_tokens":40,"output_tokens":1}}}`,
			`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
			`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"done"}}`,
			`{"type":"content_block_stop","index":0}`,
			`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":7}}`,
			`{"type":"message_stop"}`,
		} {
			var typ struct{ Type string }
			json.Unmarshal([]byte(ev), &typ)
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ.Type, ev)
			w.(http.Flusher).Flush()
		}
		return
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, f.reply(req))
}

func (f *fakeAPI) last() map[string]json.RawMessage {
	f.mu.Lock()
	defer f.mu.Unlock()
	var m map[string]json.RawMessage
	json.Unmarshal([]byte(f.bodies[len(f.bodies)-1]), &m)
	return m
}

func textReply(text string) string {
	return `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":` + quote(text) +
		`}],"stop_reason":"end_turn","usage":{"input_tokens":100,"cache_read_input_tokens":20,"cache_creation_input_tokens":0,"output_tokens":5}}`
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

func client(t testing.TB, api http.Handler, opts ...option.RequestOption) anthropic.Client {
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	return anthropic.NewClient(append([]option.RequestOption{option.WithBaseURL(srv.URL), option.WithAPIKey("test"), option.WithMaxRetries(0)}, opts...)...)
}

func bigLog() string {
	var b strings.Builder
	for i := 0; b.Len() < 60_000; i++ {
		fmt.Fprintf(&b, "2026-03-01 02:%02d:%02d INFO batch %d exported\n", i/60%60, i%60, i)
	}
	b.WriteString("2026-03-01 03:00:00 ERROR export failed: statement timeout\n")
	return b.String()
}

// TestAgentLoop runs a loop on the SDK with the middleware: the large tool
// result is replaced in the request the API receives, the history the loop
// keeps is the SDK's own and unchanged, and the read-back tool returns the
// original.
func TestAgentLoop(t *testing.T) {
	ctx := t.Context()
	p := &observing{Pipeline: newPipeline(t)}
	log := bigLog()
	api := &fakeAPI{}
	step := 0
	api.reply = func(req map[string]any) string {
		step++
		switch step {
		case 1:
			return `{"id":"m1","type":"message","role":"assistant","model":"m","content":[{"type":"tool_use","id":"toolu_1","name":"bash","input":{"command":"cat log"}}],"stop_reason":"tool_use","usage":{"input_tokens":50,"output_tokens":9}}`
		case 2:
			b, _ := json.Marshal(req["messages"])
			id := regexp.MustCompile(`knowledge id=\\"([^\\]+)\\"`).FindStringSubmatch(string(b))
			if id == nil {
				return textReply("no reference")
			}
			return `{"id":"m2","type":"message","role":"assistant","model":"m","content":[{"type":"tool_use","id":"toolu_2","name":"get_knowledge_by_id","input":{"artifact_id":` + quote(id[1]) + `}}],"stop_reason":"tool_use","usage":{"input_tokens":60,"output_tokens":9}}`
		}
		return textReply("done")
	}
	c := client(t, api, anthropicx.WithPipeline(p))
	params := anthropic.MessageNewParams{
		Model: "claude-test", MaxTokens: 1024,
		System:   []anthropic.TextBlockParam{{Text: "You are a careful operator."}},
		Tools:    append([]anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "bash", InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{}}}}}, anthropicx.Tools(p.Workspace())...),
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Why did the export fail?"))},
	}
	var readBack string
	for turn := 0; turn < 5; turn++ {
		msg, err := c.Messages.New(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		params.Messages = append(params.Messages, msg.ToParam())
		var results []anthropic.ContentBlockParamUnion
		for _, block := range msg.Content {
			u, ok := block.AsAny().(anthropic.ToolUseBlock)
			if !ok {
				continue
			}
			if res, handled := anthropicx.ExecuteTool(ctx, p.Workspace(), u); handled {
				if res.OfToolResult.IsError.Value {
					t.Fatalf("read-back failed: %+v", res.OfToolResult.Content)
				}
				readBack = res.OfToolResult.Content[0].OfText.Text
				results = append(results, res)
				continue
			}
			results = append(results, anthropic.NewToolResultBlock(u.ID, log, false))
		}
		if len(results) == 0 {
			break
		}
		params.Messages = append(params.Messages, anthropic.NewUserMessage(results...))
	}
	if step != 3 {
		t.Fatalf("%d requests, want 3", step)
	}
	if !strings.Contains(readBack, "[Read limit of 40,000 characters reached") {
		t.Errorf("first read-back page: %.200q", readBack)
	}
	// SDK tool results are text blocks: the workspace keeps their text.
	if got := readAll(t, p.Workspace(), "tool_result_toolu_1"); got != log {
		t.Errorf("read back %d characters, want the original %d", len(got), len(log))
	}
	// What the API received: the log replaced by a reference, the system
	// prompt and tools as the SDK wrote them.
	sent := api.last()
	if n := strings.Count(string(sent["messages"]), "<knowledge_list>"); n != 1 {
		t.Errorf("the request holds %d references, want 1: the large result's (the page read back stays whole)", n)
	}
	if !strings.Contains(string(sent["messages"]), "[Read limit of 40,000 characters reached") {
		t.Errorf("the page read back did not reach the model whole")
	}
	if !strings.Contains(string(sent["system"]), "careful operator") || !strings.Contains(string(sent["tools"]), "grep_knowledge") || string(sent["model"]) != `"claude-test"` {
		t.Errorf("request members changed: %v", sent)
	}
	// The loop's own history is untouched.
	if got := params.Messages[2].Content[0].OfToolResult.Content[0].OfText.Text; got != log {
		t.Errorf("the loop's history was changed")
	}
	if len(p.usage) != 3 || p.usage[2] != (pricing.Usage{Uncached: 100, CacheRead: 20, Output: 5}) {
		t.Errorf("usage fed back: %+v", p.usage)
	}
}

// readAll reads an artifact whole through the read-back tool, page by page.
func readAll(t *testing.T, ws anthropicx.Executor, id string) string {
	var got strings.Builder
	offset := 0
	for range 100 {
		in, _ := json.Marshal(map[string]any{"artifact_id": id, "offset": offset})
		text, isErr, handled := anthropicx.Execute(t.Context(), ws, "get_knowledge_by_id", in)
		if isErr || !handled {
			t.Fatalf("read %s at %d: %s", id, offset, text)
		}
		body, notice, cut := strings.Cut(text, "\n\n[Read limit of ")
		if !cut {
			return got.String() + body
		}
		m := regexp.MustCompile(`showing characters [\d,]+-([\d,]+) of`).FindStringSubmatch(notice)
		var next int
		fmt.Sscan(strings.ReplaceAll(m[1], ",", ""), &next)
		// The page holds characters offset..next, less a final "\n".
		got.WriteString(body)
		if len([]rune(got.String())) < next {
			got.WriteString("\n")
		}
		offset = next
	}
	t.Fatal("too many pages")
	return ""
}

func TestStreamingUsage(t *testing.T) {
	p := &observing{Pipeline: newPipeline(t)}
	c := client(t, &fakeAPI{}, anthropicx.WithPipeline(p))
	stream := c.Messages.NewStreaming(t.Context(), anthropic.MessageNewParams{
		Model: "m", MaxTokens: 10, Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))},
	})
	var msg anthropic.Message
	for stream.Next() {
		msg.Accumulate(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	stream.Close()
	if msg.Content[0].Text != "done" {
		t.Errorf("stream relayed wrong: %+v", msg.Content)
	}
	want := pricing.Usage{Uncached: 12, CacheRead: 3000, CacheWrite5m: 40, Output: 7}
	if len(p.usage) != 1 || p.usage[0] != want {
		t.Errorf("usage %+v, want %+v", p.usage, want)
	}
}

type failing struct{}

func (failing) PrepareDocument(context.Context, *agentctx.Document) (*pipeline.Result, error) {
	return nil, errors.New("store is down")
}

func TestFailure(t *testing.T) {
	params := anthropic.MessageNewParams{Model: "m", MaxTokens: 10, Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}}
	api := &fakeAPI{reply: func(map[string]any) string { return textReply("ok") }}
	c := client(t, api, anthropicx.WithPipeline(failing{}))
	_, err := c.Messages.New(t.Context(), params)
	if err == nil || !strings.Contains(err.Error(), "store is down") || len(api.bodies) != 0 {
		t.Errorf("failing pipeline: %v, %d requests sent", err, len(api.bodies))
	}
	open := client(t, api, anthropicx.WithPipelineOptions(failing{}, anthropicx.Options{FailOpen: true}))
	msg, err := open.Messages.New(t.Context(), params)
	if err != nil || msg.Content[0].Text != "ok" || len(api.bodies) != 1 {
		t.Errorf("fail open: %v", err)
	}
	// count_tokens is not a request to prepare.
	_, err = c.Messages.CountTokens(t.Context(), anthropic.MessageCountTokensParams{Model: "m", Messages: params.Messages})
	if err != nil && strings.Contains(err.Error(), "store is down") {
		t.Errorf("count_tokens was prepared: %v", err)
	}
}

func TestConversions(t *testing.T) {
	params := []anthropic.MessageParam{
		anthropic.NewUserMessage(anthropic.NewTextBlock("hello")),
		anthropic.NewAssistantMessage(
			anthropic.NewThinkingBlock("sig==", "let me think"),
			anthropic.NewTextBlock("running it"),
			anthropic.ContentBlockParamUnion{OfToolUse: &anthropic.ToolUseBlockParam{ID: "t1", Name: "bash", Input: json.RawMessage(`{"command": "ls",  "n":1}`)}},
			anthropic.NewToolUseBlock("t2", map[string]any{"path": "/x"}, "read"),
		),
		anthropic.NewUserMessage(
			anthropic.NewToolResultBlock("t1", "a\nb\n", false),
			anthropic.ContentBlockParamUnion{OfToolResult: &anthropic.ToolResultBlockParam{ToolUseID: "t2", IsError: anthropic.Bool(true),
				Content: []anthropic.ToolResultBlockParamContentUnion{{OfText: &anthropic.TextBlockParam{Text: "no such file", CacheControl: anthropic.NewCacheControlEphemeralParam()}}}}},
		),
	}
	msgs, err := anthropicx.Messages(params)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(params)
	// is_error: false, which NewToolResultBlock writes, is left out.
	want = []byte(strings.ReplaceAll(string(want), `"is_error":false,`, ""))
	got, _ := agentctx.MarshalMessages(msgs)
	if !sameJSON(got, want) {
		t.Errorf("Messages:\n got %s\nwant %s", got, want)
	}
	if string(msgs[1].Content.Blocks()[2].Input) != `{"command": "ls",  "n":1}` {
		t.Errorf("tool input bytes changed: %s", msgs[1].Content.Blocks()[2].Input)
	}
	if !agentctx.ValidatePairing(msgs).Valid {
		t.Errorf("pairing lost")
	}
	back, err := anthropicx.MessageParams(msgs)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := json.Marshal(back)
	if !sameJSON(again, want) {
		t.Errorf("MessageParams:\n got %s\nwant %s", again, want)
	}
	// String content and an unknown block.
	odd, _ := agentctx.UnmarshalMessages([]byte(`[{"role":"user","content":"plain","timestamp":5},{"role":"assistant","content":[{"type":"server_tool_use","id":"s1","name":"web_search","input":{"query":"q"}}]}]`))
	ps, err := anthropicx.MessageParams(odd)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(ps)
	if !sameJSON(b, []byte(`[{"role":"user","content":[{"type":"text","text":"plain"}]},{"role":"assistant","content":[{"type":"server_tool_use","id":"s1","name":"web_search","input":{"query":"q"}}]}]`)) {
		t.Errorf("odd: %s", b)
	}
	// A reply of the model.
	var reply anthropic.Message
	json.Unmarshal([]byte(`{"id":"m","type":"message","role":"assistant","model":"x","content":[{"type":"thinking","thinking":"hm","signature":"abc"},{"type":"tool_use","id":"t9","name":"bash","input":{"a":1}}],"usage":{"input_tokens":1,"output_tokens":1}}`), &reply)
	m, err := anthropicx.Message(&reply)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = m.MarshalJSON()
	if string(b) != `{"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"abc"},{"type":"tool_use","id":"t9","name":"bash","input":{"a":1}}]}` {
		t.Errorf("Message: %s", b)
	}
}

func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}

func TestTools(t *testing.T) {
	p := newPipeline(t)
	tools := anthropicx.Tools(p.Workspace())
	defs := p.Workspace().Tools()
	b, _ := json.Marshal(tools)
	want, _ := json.Marshal(defs)
	if !sameJSON(b, want) {
		t.Errorf("Tools:\n got %s\nwant %s", b, want)
	}
	if _, handled := anthropicx.ExecuteTool(t.Context(), p.Workspace(), anthropic.ToolUseBlock{ID: "x", Name: "bash", Input: json.RawMessage(`{}`)}); handled {
		t.Errorf("bash handled")
	}
	res, handled := anthropicx.ExecuteTool(t.Context(), p.Workspace(), anthropic.ToolUseBlock{ID: "x", Name: "get_knowledge_by_id", Input: json.RawMessage(`{"id":"a","context":1}`)})
	if !handled || !res.OfToolResult.IsError.Value || !strings.Contains(res.OfToolResult.Content[0].OfText.Text, `unknown argument`) {
		t.Errorf("bad call: %v %+v", handled, res.OfToolResult)
	}
}

// TestPipelineObservesUsage: a *pipeline.Pipeline given as it is gets the
// usage of each response, so the next request's estimate starts from what
// the API billed.
func TestPipelineObservesUsage(t *testing.T) {
	p := newPipeline(t)
	var reports []pipeline.Report
	api := &fakeAPI{reply: func(map[string]any) string { return textReply("ok") }}
	c := client(t, api, anthropicx.WithPipelineOptions(p, anthropicx.Options{
		OnResult: func(_ context.Context, res *pipeline.Result) { reports = append(reports, res.Report) },
	}))
	msgs := []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hello"))}
	for range 2 {
		if _, err := c.Messages.New(t.Context(), anthropic.MessageNewParams{Model: "m", MaxTokens: 10, Messages: msgs}); err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, anthropic.NewAssistantMessage(anthropic.NewTextBlock("ok")), anthropic.NewUserMessage(anthropic.NewTextBlock("more")))
	}
	if len(reports) != 2 || reports[0].Session.Calibrated || !reports[1].Session.Calibrated {
		t.Fatalf("reports %d; calibrated after the first response: %+v", len(reports), reports[len(reports)-1].Session)
	}
	// The API billed 120 input tokens for the first request (textReply).
	if est := reports[1].EstimatedTokens; est < 120 {
		t.Errorf("estimate %d, want the billed 120 plus the new messages", est)
	}
}
