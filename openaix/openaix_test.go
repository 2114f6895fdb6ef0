package openaix_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/openaix"
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
			`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"do"},"finish_reason":null}],"usage":null}`,
			`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"ne"},"finish_reason":"stop"}],"usage":null}`,
			`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":900,"completion_tokens":4,"total_tokens":904,"prompt_tokens_details":{"cached_tokens":768}}}`,
			`[DONE]`,
		} {
			fmt.Fprintf(w, "data: %s\n\n", ev)
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

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

func completion(message string, prompt int) string {
	return `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"stop","message":` + message +
		`}],"usage":{"prompt_tokens":` + fmt.Sprint(prompt) + `,"completion_tokens":9,"total_tokens":0}}`
}

func client(t testing.TB, api http.Handler, opts ...option.RequestOption) openai.Client {
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	return openai.NewClient(append([]option.RequestOption{option.WithBaseURL(srv.URL), option.WithAPIKey("test"), option.WithMaxRetries(0)}, opts...)...)
}

func bigLog() string {
	var b strings.Builder
	for i := 0; b.Len() < 60_000; i++ {
		fmt.Fprintf(&b, "2026-03-01 02:%02d:%02d INFO batch %d exported\n", i/60%60, i%60, i)
	}
	b.WriteString("2026-03-01 03:00:00 ERROR export failed: statement timeout\n")
	return b.String()
}

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
			return completion(`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"bash","arguments":"{\"command\":\"cat log\"}"}}]}`, 50)
		case 2:
			b, _ := json.Marshal(req["messages"])
			id := regexp.MustCompile(`knowledge id=\\"([^\\]+)\\"`).FindStringSubmatch(string(b))
			if id == nil {
				return completion(`{"role":"assistant","content":"no reference"}`, 60)
			}
			args := quote(`{"artifact_id":"` + id[1] + `","pattern":"ERROR"}`)
			return completion(`{"role":"assistant","content":null,"tool_calls":[{"id":"call_2","type":"function","function":{"name":"grep_knowledge","arguments":`+args+`}}]}`, 60)
		}
		return completion(`{"role":"assistant","content":"done"}`, 70)
	}
	c := client(t, api, openaix.WithPipeline(p))
	params := openai.ChatCompletionNewParams{
		Model: "gpt-test",
		Tools: openaix.Tools(p.Workspace()),
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage("You are a careful operator."),
			openai.UserMessage("Why did the export fail?"),
		},
	}
	var readBack string
	for turn := 0; turn < 5; turn++ {
		res, err := c.Chat.Completions.New(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		msg := res.Choices[0].Message
		params.Messages = append(params.Messages, msg.ToParam())
		if len(msg.ToolCalls) == 0 {
			break
		}
		for _, call := range msg.ToolCalls {
			if m, handled := openaix.ExecuteTool(ctx, p.Workspace(), call); handled {
				readBack = m.OfTool.Content.OfString.Value
				params.Messages = append(params.Messages, m)
				continue
			}
			params.Messages = append(params.Messages, openai.ToolMessage(log, call.ID))
		}
	}
	if step != 3 {
		t.Fatalf("%d requests, want 3", step)
	}
	if want := fmt.Sprintf("%d:2026-03-01 03:00:00 ERROR export failed: statement timeout", strings.Count(log, "\n")); readBack != want {
		t.Errorf("grep_knowledge read back %q", readBack)
	}
	sent := api.last()
	if strings.Contains(string(sent["messages"]), "INFO batch 100 exported") || !strings.Contains(string(sent["messages"]), "knowledge_list") {
		t.Errorf("the large result was sent as is")
	}
	if !strings.Contains(string(sent["tools"]), "grep_knowledge") || string(sent["model"]) != `"gpt-test"` {
		t.Errorf("request members changed")
	}
	if got := params.Messages[3].OfTool.Content.OfString.Value; got != log {
		t.Errorf("the loop's history was changed")
	}
	if len(p.usage) != 3 || p.usage[2] != (pricing.Usage{Uncached: 70, Output: 9}) {
		t.Errorf("usage fed back: %+v", p.usage)
	}
	// The whole result reads back through the tools as the original.
	text, isErr, handled := openaix.Execute(ctx, p.Workspace(), "get_knowledge_by_lines", json.RawMessage(`{"artifact_id":"tool_result_call_1","start_line":1000,"end_line":5000}`))
	lines := strings.Split(log, "\n")
	if isErr || !handled || text != fmt.Sprintf("Lines 1000-%d of %d\n", len(lines)-1, len(lines)-1)+strings.Join(lines[999:len(lines)-1], "\n") {
		t.Errorf("lines read back: %q", text)
	}
}

func TestStreamingUsage(t *testing.T) {
	p := &observing{Pipeline: newPipeline(t)}
	c := client(t, &fakeAPI{}, openaix.WithPipeline(p))
	stream := c.Chat.Completions.NewStreaming(t.Context(), openai.ChatCompletionNewParams{
		Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	stream.Close()
	if acc.Choices[0].Message.Content != "done" {
		t.Errorf("stream relayed wrong: %+v", acc.Choices)
	}
	want := pricing.Usage{Uncached: 132, CacheRead: 768, Output: 4}
	if len(p.usage) != 1 || p.usage[0] != want {
		t.Errorf("usage %+v, want %+v", p.usage, want)
	}
}

func TestResponsesAPIPassesThrough(t *testing.T) {
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = string(b)
		w.WriteHeader(500)
	}))
	defer srv.Close()
	mw := openaix.Middleware(failingPreparer{}, openaix.Options{})
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/responses", strings.NewReader(`{"input":"x"}`))
	resp, err := mw(req, http.DefaultClient.Do)
	if err != nil || got != `{"input":"x"}` {
		t.Errorf("responses request: %v %q", err, got)
	}
	resp.Body.Close()
}

type failingPreparer struct{}

func (failingPreparer) PrepareDocument(context.Context, *agentctx.Document) (*pipeline.Result, error) {
	return nil, fmt.Errorf("must not be called")
}

func TestConversions(t *testing.T) {
	params := []openai.ChatCompletionMessageParamUnion{
		openai.SystemMessage("be brief"),
		openai.UserMessage("list files"),
		{OfAssistant: &openai.ChatCompletionAssistantMessageParam{ToolCalls: []openai.ChatCompletionMessageToolCallUnionParam{{OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
			ID: "c1", Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: "ls", Arguments: `{"path": "."}`}}}}}},
		openai.ToolMessage("a\nb\n", "c1"),
		openai.AssistantMessage("two files"),
		openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{openai.TextContentPart("and this"), openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: "https://x/y.png"})}),
	}
	msgs, err := openaix.Messages(params)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(params)
	got, _ := agentctx.MarshalMessages(msgs)
	if !sameJSON(got, want) {
		t.Errorf("Messages:\n got %s\nwant %s", got, want)
	}
	if !agentctx.ValidatePairing(msgs).Valid {
		t.Errorf("pairing lost")
	}
	back, err := openaix.MessageParams(msgs)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := json.Marshal(back)
	if !sameJSON(again, want) {
		t.Errorf("MessageParams:\n got %s\nwant %s", again, want)
	}
	var reply openai.ChatCompletionMessage
	json.Unmarshal([]byte(`{"role":"assistant","content":null,"tool_calls":[{"id":"c9","type":"function","function":{"name":"f","arguments":"{}"}}]}`), &reply)
	m, err := openaix.Message(&reply)
	if err != nil || len(m.ToolCalls) != 1 || m.ToolCalls[0].ID != "c9" {
		t.Errorf("Message: %+v %v", m, err)
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
	b, _ := json.Marshal(openaix.Tools(p.Workspace()))
	want, _ := json.Marshal(p.Workspace().OpenAITools())
	if !sameJSON(b, want) {
		t.Errorf("Tools:\n got %s\nwant %s", b, want)
	}
	var call openai.ChatCompletionMessageToolCallUnion
	json.Unmarshal([]byte(`{"id":"c","type":"function","function":{"name":"bash","arguments":"{}"}}`), &call)
	if _, handled := openaix.ExecuteTool(t.Context(), p.Workspace(), call); handled {
		t.Errorf("bash handled")
	}
}
