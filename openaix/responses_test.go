package openaix_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"

	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/internal/testkit/fakeupstream"
	"github.com/agentctx/agentctx/openaix"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/pricing"
	"github.com/agentctx/agentctx/prune"
	"github.com/agentctx/agentctx/workspace"
)

// responsesRun is one openai-go Responses loop through the middleware
// against the strict fake upstream, with the fake's read-back model.
type responsesRun struct {
	p      *observing
	fake   *fakeupstream.Server
	model  *fakeupstream.ReadBack
	final  string
	pages  []string // what get_knowledge_by_id returned to the loop
	outs   map[string]string
	sent   int // requests the loop sent
	usages int
}

func offers(c *fakeupstream.Call, name string) bool {
	for _, n := range c.ToolNames {
		if n == name {
			return true
		}
	}
	return false
}

// runResponsesLoop runs the loop: the model runs bash on big.txt (62,000
// characters with a token in the middle), filler steps of fillerChars
// each, then reads the token back by artifact id and reports it. native
// selects NativeMiddleware with NativeSummarizer; limit is the
// compaction limit (0: the default); stream streams every answer.
func runResponsesLoop(t *testing.T, token string, fillerChars, limit int, native, fromSummary, stream bool, set ...func(*pipeline.Options)) *responsesRun {
	t.Helper()
	ctx := t.Context()
	dir := t.TempDir()
	var mu sync.Mutex
	now := time.Date(2026, 3, 4, 9, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	opts := pipeline.Options{
		SessionID:    "s1",
		WorkspaceDir: filepath.Join(dir, "ws"),
		Now:          clock,
		Prune:        prune.Options{MaxAge: time.Minute, KeepRecent: 2},
		Compact:      compact.Options{Dir: filepath.Join(dir, "archive"), Limit: limit},
	}
	if native {
		opts.Compact.Summarizer = openaix.NativeSummarizer(openaix.NativeSummarizerOptions{})
	}
	for _, f := range set {
		f(&opts)
	}
	pl, err := pipeline.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pl.Close() })
	r := &responsesRun{p: &observing{Pipeline: pl}, outs: map[string]string{}}
	payload := fakeupstream.ReadBackPayload(token, 62_000)
	r.model = fakeupstream.NewReadBack(fakeupstream.ReadBackOptions{
		Mode: fakeupstream.ByID, FromSummary: fromSummary, Fillers: 3, SummaryTitle: compact.SummaryTitle,
		Produce: func(c *fakeupstream.Call) (fakeupstream.ToolCall, bool) {
			return fakeupstream.ToolCall{Name: "bash", Input: map[string]any{"command": "cat big.txt"}}, offers(c, "bash")
		},
		Filler: func(c *fakeupstream.Call, i int) (fakeupstream.ToolCall, bool) {
			return fakeupstream.ToolCall{Name: "bash", Input: map[string]any{"command": fmt.Sprintf("echo filler %d", i)}}, true
		},
		ReadID: func(c *fakeupstream.Call, id string, offset int) (fakeupstream.ToolCall, bool) {
			if id == "<id>" {
				return fakeupstream.ToolCall{}, false // the summary's usage line, not an id
			}
			in := map[string]any{"artifact_id": id}
			if offset > 0 {
				in["offset"] = offset
			}
			return fakeupstream.ToolCall{Name: workspace.ToolGetKnowledgeByID, Input: in}, offers(c, workspace.ToolGetKnowledgeByID)
		},
	})
	r.fake = fakeupstream.New(fakeupstream.Options{Script: r.model.Script})
	up := httptest.NewServer(r.fake)
	t.Cleanup(up.Close)
	mw := openaix.WithPipelineOptions(r.p, openaix.Options{})
	if native {
		mw = openaix.WithPipelineNative(r.p, openaix.Options{})
	}
	c := openai.NewClient(option.WithBaseURL(up.URL+"/v1/"), option.WithAPIKey("test"), option.WithMaxRetries(0), mw)

	tools := append([]responses.ToolUnionParam{responses.ToolParamOfFunction("bash",
		map[string]any{"type": "object", "properties": map[string]any{"command": map[string]any{"type": "string"}}}, false)},
		openaix.ResponsesTools(r.p.Workspace())...)
	input := responses.ResponseInputParam{responses.ResponseInputItemParamOfMessage(
		"Print big.txt, run the filler steps, then find SECRET_TOKEN in it again and report it as TOKEN=<value>.", responses.EasyInputMessageRoleUser)}
	for turn := 0; turn < 20; turn++ {
		params := responses.ResponseNewParams{Model: "gpt-5", Store: openai.Bool(false), Tools: tools,
			Input: responses.ResponseNewParamsInputUnion{OfInputItemList: input}}
		var output []responses.ResponseOutputItemUnion
		if stream {
			s := c.Responses.NewStreaming(ctx, params)
			for s.Next() {
				if ev := s.Current(); ev.Type == "response.completed" {
					output = ev.Response.Output
				}
			}
			if err := s.Err(); err != nil {
				t.Fatalf("turn %d: %v\nthe model's report:\n%s", turn, err, r.model.Report())
			}
			s.Close()
		} else {
			resp, err := c.Responses.New(ctx, params)
			if err != nil {
				t.Fatalf("turn %d: %v\nthe model's report:\n%s", turn, err, r.model.Report())
			}
			output = resp.Output
		}
		r.sent++
		mu.Lock()
		now = now.Add(10 * time.Minute) // every earlier result older than the prune age, the prompt cache cold
		mu.Unlock()
		calls := 0
		for _, item := range output {
			input = append(input, param.Override[responses.ResponseInputItemUnionParam](json.RawMessage(item.RawJSON())))
			switch item.Type {
			case "message":
				r.final = item.AsMessage().Content[0].Text
			case "function_call":
				calls++
				call := item.AsFunctionCall()
				if out, handled := openaix.ExecuteResponsesTool(ctx, r.p.Workspace(), call); handled {
					r.pages = append(r.pages, out.OfFunctionCallOutput.Output.OfString.Value)
					input = append(input, out)
					continue
				}
				out := fmt.Sprintf("filler ok %s\n", call.Arguments) + strings.Repeat("padding line of a filler step\n", fillerChars/30)
				if strings.Contains(call.Arguments, "big.txt") {
					out = payload
				}
				r.outs[call.CallID] = out
				input = append(input, responses.ResponseInputItemUnionParam{OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{
					CallID: openai.String(call.CallID), Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: openai.String(out)}}})
			}
		}
		if calls == 0 {
			break
		}
	}
	for _, rec := range r.fake.Records() {
		if rec.Rejected != "" {
			t.Errorf("the upstream rejected a request to %s: %s", rec.Path, rec.Rejected)
		}
	}
	r.p.mu.Lock()
	r.usages = len(r.p.usage)
	r.p.mu.Unlock()
	return r
}

// checkReadBack checks the large result reached the model as a
// reference, every page read back reached it whole, and the answer.
func (r *responsesRun) checkReadBack(t *testing.T, token string) {
	t.Helper()
	if leak := r.model.Leaked(); leak != "" {
		t.Fatalf("the large result was not replaced by a reference: %s", leak)
	}
	if early := r.model.Early(); !strings.HasPrefix(early, "<knowledge_list>") {
		t.Fatalf("the large result reached the model as %d characters that are not a reference\nthe model's report:\n%s", len(early), r.model.Report())
	}
	reads := r.model.Reads()
	for i, rd := range reads {
		if i < len(r.pages) && rd.Result != r.pages[i] {
			t.Errorf("read %d: get_knowledge_by_id returned %d characters, the model received %d:\n%.300s", i+1, len(r.pages[i]), len(rd.Result), rd.Result)
		}
	}
	if want := "TOKEN=" + token; r.final != want || r.model.Answer() != want {
		t.Errorf("the final answer is %q, want %q after %d read attempts\nthe model's report:\n%s", r.final, want, len(reads), r.model.Report())
	}
}

// responsesSent returns the bodies of the Responses requests the fake
// accepted (not the compaction requests).
func (r *responsesRun) responsesSent() []map[string]any {
	var out []map[string]any
	for _, rec := range r.fake.Records() {
		if rec.Path == "/v1/responses" && rec.Rejected == "" {
			var m map[string]any
			json.Unmarshal(rec.Body, &m)
			out = append(out, m)
		}
	}
	return out
}

// TestResponsesLoop is an openai-go loop on the Responses API through
// the middleware (client-side edits), against the strict fake upstream,
// streamed and not: the large result is offloaded (the model gets a
// reference) and read back by artifact id with get_knowledge_by_id as a
// Responses function tool, older results are pruned in the input sent
// while the loop's own history keeps them, and the usage of every answer
// is fed back.
func TestResponsesLoop(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			const token = "tok_openaixresp1"
			r := runResponsesLoop(t, token, 600, 0, false, false, stream)
			r.checkReadBack(t, token)
			if r.usages != r.sent {
				t.Errorf("%d usages fed back for %d requests", r.usages, r.sent)
			}
			if u := r.p.usage[len(r.p.usage)-1]; u.Input() == 0 || u.Output == 0 {
				t.Errorf("the last usage fed back: %+v", u)
			}
			// A filler result the loop sent whole went pruned in a later
			// request.
			pruned := false
			for _, body := range r.responsesSent() {
				for _, it := range body["input"].([]any) {
					m := it.(map[string]any)
					if m["type"] != "function_call_output" {
						continue
					}
					orig, ok := r.outs[m["call_id"].(string)]
					if ok && strings.HasPrefix(orig, "filler ok") && m["output"] != orig {
						pruned = true
					}
				}
			}
			if !pruned {
				t.Errorf("no filler result was pruned in %d requests", r.sent)
			}
		})
	}
}

// TestResponsesCompaction runs the loop with a small compaction limit,
// client-side (the pipeline's summary) and native (the provider's
// compaction through POST /v1/responses/compact): the session compacts,
// the model reads the early result back through the pointers of the
// summary, and in native mode the compaction item the fake issued goes
// back upstream, which verifies it, on every later request, while no
// client-side summary is sent. The fillers are cleared in batches of the
// default size only (more than the whole window), so that the session
// reaches the threshold: in a window of 4,000 tokens the priced policy
// clears each stale filler instead, which costs less than a summary
// request.
func TestResponsesCompaction(t *testing.T) {
	for _, native := range []bool{false, true} {
		t.Run(fmt.Sprintf("native=%v", native), func(t *testing.T) {
			const token = "tok_openaixcmp2"
			r := runResponsesLoop(t, token, 6000, 4000, native, true, false,
				func(o *pipeline.Options) { o.Clearing = pipeline.ClearBatched })
			r.checkReadBack(t, token)
			compactions, carried, summaries := 0, 0, 0
			for _, rec := range r.fake.Records() {
				switch {
				case rec.Path == fakeupstream.CompactPath && rec.Rejected == "":
					compactions++
				case rec.Path == "/v1/responses" && bytes.Contains(rec.Body, []byte(`"type":"compaction"`)):
					carried++
				}
				if rec.Path == "/v1/responses" && bytes.Contains(rec.Body, []byte(compact.SummaryTitle)) {
					summaries++
				}
			}
			t.Logf("%d requests, %d provider compactions, %d requests carrying the item, %d carrying a summary", r.sent, compactions, carried, summaries)
			if summaries == 0 {
				t.Fatalf("the session never compacted")
			}
			if native && (compactions == 0 || carried == 0) {
				t.Errorf("native mode: %d provider compactions, %d requests carrying the item", compactions, carried)
			}
			if !native && (compactions != 0 || carried != 0) {
				t.Errorf("client-side mode: %d provider compactions, %d requests carrying an item", compactions, carried)
			}
		})
	}
}

// TestResponsesPassThrough: a Responses request whose history the server
// keeps (previous_response_id, or store not false) goes as it came, in
// both modes, and its usage is not fed to the pipeline.
func TestResponsesPassThrough(t *testing.T) {
	for _, body := range []string{
		`{"model":"gpt-5","previous_response_id":"resp_1","store":false,"input":[{"type":"message","role":"user","content":"` + strings.Repeat("x", 80_000) + `"}]}`,
		`{"model":"gpt-5","input":[{"type":"function_call_output","call_id":"c1","output":"` + strings.Repeat("y", 80_000) + `"}]}`,
		`{"model":"gpt-5","store":true,"input":[{"type":"function_call_output","call_id":"c1","output":"` + strings.Repeat("y", 80_000) + `"}]}`,
	} {
		for _, native := range []bool{false, true} {
			p := &observing{Pipeline: newPipeline(t)}
			mw := openaix.Middleware(p, openaix.Options{})
			if native {
				mw = openaix.NativeMiddleware(p, openaix.Options{})
			}
			var got []byte
			req, _ := http.NewRequest(http.MethodPost, "http://api.test/v1/responses", strings.NewReader(body))
			resp, err := mw(req, func(r *http.Request) (*http.Response, error) {
				got, _ = io.ReadAll(r.Body)
				return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
					Body: io.NopCloser(strings.NewReader(`{"usage":{"input_tokens":9,"output_tokens":1}}`))}, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if string(got) != body {
				t.Errorf("native=%v: %.60s… sent as %.200s", native, body, got)
			}
			if len(p.usage) != 0 {
				t.Errorf("native=%v: the usage of a request not prepared was fed back: %+v", native, p.usage)
			}
		}
	}
}

// TestResponsesUnchangedBytes: a Responses request the pipeline leaves as
// it is goes upstream with the client's bytes.
func TestResponsesUnchangedBytes(t *testing.T) {
	body := `{"model":"gpt-5","store":false,"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]},` +
		`{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"e"},{"type":"function_call","id":"fc_1","call_id":"c1","name":"bash","arguments":"{}","status":"completed"},` +
		`{"type":"function_call_output","call_id":"c1","output":"ok"}],"tools":[]}`
	p := &observing{Pipeline: newPipeline(t)}
	var got []byte
	req, _ := http.NewRequest(http.MethodPost, "http://api.test/v1/responses", strings.NewReader(body))
	resp, err := openaix.Middleware(p, openaix.Options{})(req, func(r *http.Request) (*http.Response, error) {
		got, _ = io.ReadAll(r.Body)
		return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(strings.NewReader(`{"usage":{"input_tokens":90,"input_tokens_details":{"cached_tokens":64},"output_tokens":3}}`))}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if string(got) != body {
		t.Errorf("sent %s", got)
	}
	if want := (pricing.Usage{Uncached: 26, CacheRead: 64, Output: 3}); len(p.usage) != 1 || p.usage[0] != want {
		t.Errorf("usage %+v, want %+v", p.usage, want)
	}
}

// TestNativeChatFallsBack: Chat Completions has no compaction of
// OpenAI's; in native mode its compactions are the pipeline's own
// summary, and nothing is sent to a compaction endpoint.
func TestNativeChatFallsBack(t *testing.T) {
	dir := t.TempDir()
	pl, err := pipeline.New(pipeline.Options{SessionID: "s1", WorkspaceDir: filepath.Join(dir, "ws"),
		Compact: compact.Options{Dir: filepath.Join(dir, "archive"), Limit: 2000, Summarizer: openaix.NativeSummarizer(openaix.NativeSummarizerOptions{})}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pl.Close() })
	fake := fakeupstream.New(fakeupstream.Options{})
	up := httptest.NewServer(fake)
	t.Cleanup(up.Close)
	c := openai.NewClient(option.WithBaseURL(up.URL+"/v1/"), option.WithAPIKey("test"), option.WithMaxRetries(0), openaix.WithPipelineNative(pl, openaix.Options{}))
	msgs := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("You are a coding agent."), openai.UserMessage("Fix the build.")}
	for i := range 8 {
		id := fmt.Sprintf("call_%d", i)
		msgs = append(msgs,
			openai.ChatCompletionMessageParamUnion{OfAssistant: &openai.ChatCompletionAssistantMessageParam{ToolCalls: []openai.ChatCompletionMessageToolCallUnionParam{{OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
				ID: id, Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: "bash", Arguments: `{"command":"make"}`}}}}}},
			openai.ToolMessage(strings.Repeat(fmt.Sprintf("step %d ok\n", i), 200), id))
	}
	if _, err := c.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{Model: "gpt-5", Messages: msgs}); err != nil {
		t.Fatal(err)
	}
	for _, rec := range fake.Records() {
		if rec.Path == fakeupstream.CompactPath {
			t.Errorf("a Chat Completions request was compacted by the provider")
		}
		if rec.Path == "/v1/chat/completions" && (rec.Rejected != "" || !bytes.Contains(rec.Body, []byte(compact.SummaryTitle))) {
			t.Errorf("the chat request was not compacted client-side (rejected: %q): %.300s", rec.Rejected, rec.Body)
		}
	}
}

// TestResponsesBadInput: input items the mapping cannot read fail the
// request with the reason (by default), or go unchanged with FailOpen.
func TestResponsesBadInput(t *testing.T) {
	body := `{"model":"gpt-5","store":false,"input":[3]}`
	for _, failOpen := range []bool{false, true} {
		p := &observing{Pipeline: newPipeline(t)}
		var got []byte
		req, _ := http.NewRequest(http.MethodPost, "http://api.test/v1/responses", strings.NewReader(body))
		resp, err := openaix.Middleware(p, openaix.Options{FailOpen: failOpen})(req, func(r *http.Request) (*http.Response, error) {
			got, _ = io.ReadAll(r.Body)
			return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader(`{}`))}, nil
		})
		if !failOpen {
			if err == nil || !strings.Contains(err.Error(), "input item 0: not an object") || got != nil {
				t.Errorf("err %v, sent %q", err, got)
			}
			continue
		}
		if err != nil || string(got) != body {
			t.Errorf("fail open: err %v, sent %q", err, got)
		}
		resp.Body.Close()
	}
}
