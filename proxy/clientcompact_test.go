package proxy_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/testkit/fakeupstream"
	"github.com/agentctx/agentctx/proxy"
)

// codexCompactionPrompt starts Codex's own compaction request.
const codexCompactionPrompt = "You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary for another LLM that will resume the task."

// TestClientCompactionReadsTheCache: a client's own compaction request on
// the Responses API (Codex's: the conversation it sent last, the
// instruction appended, and "tools": []) is sent with the session's tools
// and "tool_choice": "none", so OpenAI's prompt cache serves the
// conversation instead of billing it whole; the requests that are not one
// (their own tools, another conversation, a tool named by tool_choice, the
// Chat API's equivalent with its own list) are forwarded as they came.
func TestClientCompactionReadsTheCache(t *testing.T) {
	tool := `{"type":"function","name":"exec_command","description":"Runs a command.","parameters":{"type":"object","properties":{"cmd":{"type":"string"}}}}`
	developer := `{"type":"message","role":"developer","content":[{"type":"input_text","text":` + quote(strings.Repeat("You are a coding agent. ", 600)) + `}]}`
	user := `{"type":"message","role":"user","content":[{"type":"input_text","text":"run the steps"}]}`
	call := `{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"make\"}","call_id":"call_1"}`
	output := `{"type":"function_call_output","call_id":"call_1","output":` + quote(strings.Repeat("build line ok\n", 800)) + `}`
	compaction := `{"type":"message","role":"user","content":[{"type":"input_text","text":` + quote(codexCompactionPrompt) + `}]}`
	body := func(tools, choice string, items ...string) string {
		return `{"model":"gpt-5-codex","stream":false,"store":false,"prompt_cache_key":"sess-1","tools":[` + tools + `],"tool_choice":` + choice +
			`,"parallel_tool_calls":false,"input":[` + strings.Join(items, ",") + `]}`
	}
	step := body(tool, `"auto"`, developer, user, call, output)

	for _, tc := range []struct {
		name     string
		second   string
		restored bool
	}{
		{"compaction", body("", `"auto"`, developer, user, call, output, compaction), true},
		{"compaction without tool_choice", strings.Replace(body("", `"auto"`, developer, user, call, output, compaction), `"tool_choice":"auto",`, "", 1), true},
		{"a step with its own tools", body(tool, `"auto"`, developer, user, call, output, compaction), false},
		{"another conversation", body("", `"auto"`, developer, compaction), false},
		{"the same list, nothing after it", body("", `"auto"`, developer, user, call, output), false},
		{"a tool named", body("", `{"type":"function","name":"exec_command"}`, developer, user, call, output, compaction), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := fakeupstream.New(fakeupstream.Options{Script: func(*fakeupstream.Call) fakeupstream.Reply {
				return fakeupstream.Reply{Text: "summary"}
			}})
			us := httptest.NewServer(fake)
			t.Cleanup(us.Close)
			srv, err := proxy.New(proxy.Options{OpenAIURL: us.URL, Logger: testLogger(t)})
			if err != nil {
				t.Fatal(err)
			}
			ps := httptest.NewServer(srv)
			t.Cleanup(ps.Close)
			send := func(b string) {
				resp := post(t, ps.URL+"/v1/responses", b, nil)
				data, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					t.Fatalf("status %d: %s", resp.StatusCode, data)
				}
			}
			send(step)
			before := fake.Bill().Totals
			send(tc.second)
			after := fake.Bill().Totals
			recs := fake.Records()
			var got map[string]any
			if err := json.Unmarshal(recs[len(recs)-1].Body, &got); err != nil {
				t.Fatal(err)
			}
			tools, _ := got["tools"].([]any)
			read := after.CacheRead - before.CacheRead
			if !tc.restored {
				var want map[string]any
				json.Unmarshal([]byte(tc.second), &want)
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("forwarded\n%v\nwant it as it came\n%v", got, want)
				}
				return
			}
			if len(tools) != 1 || got["tool_choice"] != "none" {
				t.Fatalf("forwarded tools %v, tool_choice %v: want the session's tool and \"none\"", got["tools"], got["tool_choice"])
			}
			if in, _ := got["input"].([]any); len(in) != 5 {
				t.Fatalf("forwarded %d input items, want the 5 sent", len(in))
			}
			// Everything before the instruction is the step's prompt, cached.
			if in := after.Input - before.Input; read == 0 || in > 200 {
				t.Fatalf("the compaction read %d tokens from the cache and %d uncached: want the step's prompt read", read, in)
			}
		})
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestClientCompactionAfterAnEdit: when the Engine edits the session's
// requests (here: every tool output cleared), the compaction request is
// matched against the step as it was forwarded, edited, and sent with the
// session's tools: what the tools memo keeps of a forwarded body is its
// list as sent, not as the client wrote it.
func TestClientCompactionAfterAnEdit(t *testing.T) {
	tool := `{"type":"function","name":"exec_command","description":"Runs a command.","parameters":{"type":"object"}}`
	items := []string{
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"run the steps"}]}`,
		`{"type":"function_call","name":"exec_command","arguments":"{}","call_id":"call_1"}`,
		`{"type":"function_call_output","call_id":"call_1","output":` + quote(strings.Repeat("build line ok\n", 400)) + `}`,
	}
	step := `{"model":"gpt-5-codex","store":false,"tools":[` + tool + `],"tool_choice":"auto","input":[` + strings.Join(items, ",") + `]}`
	compaction := `{"model":"gpt-5-codex","store":false,"tools":[],"input":[` + strings.Join(items, ",") +
		`,{"type":"message","role":"user","content":[{"type":"input_text","text":` + quote(codexCompactionPrompt) + `}]}]}`
	clear := func(req *proxy.Request) []agentctx.Message {
		out := slices.Clone(req.Document.Messages)
		for j := range out {
			if out[j].Role == agentctx.RoleTool {
				out[j] = out[j].WithContent(agentctx.Text("[cleared]"))
			}
		}
		return out
	}
	fake := fakeupstream.New(fakeupstream.Options{Script: func(*fakeupstream.Call) fakeupstream.Reply {
		return fakeupstream.Reply{Text: "summary"}
	}})
	us := httptest.NewServer(fake)
	t.Cleanup(us.Close)
	srv, err := proxy.New(proxy.Options{OpenAIURL: us.URL, Engine: &funcEngine{prepare: clear}, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ps := httptest.NewServer(srv)
	t.Cleanup(ps.Close)
	for _, b := range []string{step, compaction} {
		resp := post(t, ps.URL+"/v1/responses", b, map[string]string{proxy.HeaderSession: "s1"})
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, data)
		}
	}
	recs := fake.Records()
	last := recs[len(recs)-1].Body
	if !strings.Contains(string(recs[0].Body), "[cleared]") || !strings.Contains(string(last), "[cleared]") {
		t.Fatalf("the Engine's edit was not forwarded: %.300s", last)
	}
	var got struct {
		Tools []any `json:"tools"`
	}
	if err := json.Unmarshal(last, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Tools) != 1 {
		t.Fatalf("the compaction request was forwarded with tools %v: want the session's", got.Tools)
	}
}
