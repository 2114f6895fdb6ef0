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

// TestClientCompactionSendsNewResultsWhole: Codex's compaction request
// ("tools": [], the conversation it sent last, one more tool call and its
// output, then the instruction) through the proxy and its pipeline: the
// output, new in that request and over the workspace's inline limit, is
// forwarded whole, so that the summary Codex keeps instead of the history
// can hold what it says (costsim, Codex 0.169: a reference in its place
// was all the summary saw, and the task's chain broke). The same output
// in an ordinary step, or in a toolless request that is not the
// session's conversation one step on, is sent as a reference.
func TestClientCompactionSendsNewResultsWhole(t *testing.T) {
	tool := `{"type":"function","name":"exec_command","description":"Runs a command.","parameters":{"type":"object","properties":{"cmd":{"type":"string"}}}}`
	developer := `{"type":"message","role":"developer","content":[{"type":"input_text","text":"You are a coding agent."}]}`
	user := `{"type":"message","role":"user","content":[{"type":"input_text","text":"run the chain"}]}`
	call1 := `{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"step 34\"}","call_id":"call_34"}`
	// Step 34's read was offloaded when it was new: the step went edited.
	output1 := `{"type":"function_call_output","call_id":"call_34","output":` + quote(codexRead("chain step 034 NEXT=3434343434343434", 45_000)) + `}`
	call2 := `{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"cat step35.txt\"}","call_id":"call_35"}`
	out := codexRead("chain step 035 NEXT=3535353535353535", 55_000)
	output2 := `{"type":"function_call_output","call_id":"call_35","output":` + quote(out) + `}`
	compaction := `{"type":"message","role":"user","content":[{"type":"input_text","text":` + quote(codexCompactionPrompt) + `}]}`
	body := func(tools string, items ...string) string {
		return `{"model":"gpt-5-codex","stream":false,"store":false,"prompt_cache_key":"sess-1","tools":[` + tools + `],"tool_choice":"auto",` +
			`"parallel_tool_calls":false,"input":[` + strings.Join(items, ",") + `]}`
	}
	step := body(tool, developer, user, call1, output1)
	for _, tc := range []struct {
		name   string
		second string
		whole  bool
	}{
		{"compaction", body("", developer, user, call1, output1, call2, output2, compaction), true},
		{"a step", body(tool, developer, user, call1, output1, call2, output2), false},
		{"a toolless request of another conversation", body("", developer, call2, output2, compaction), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := fakeupstream.New(fakeupstream.Options{Script: func(*fakeupstream.Call) fakeupstream.Reply {
				return fakeupstream.Reply{Text: "summary"}
			}})
			us := httptest.NewServer(fake)
			t.Cleanup(us.Close)
			srv, err := proxy.New(proxy.Options{OpenAIURL: us.URL, Engine: pipelineEngine(t, proxy.PipelineOptions{}), Logger: testLogger(t)})
			if err != nil {
				t.Fatal(err)
			}
			ps := httptest.NewServer(srv)
			t.Cleanup(ps.Close)
			for _, b := range []string{step, tc.second} {
				resp := post(t, ps.URL+"/v1/responses", b, nil)
				data, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					t.Fatalf("status %d: %s", resp.StatusCode, data)
				}
			}
			recs := fake.Records()
			var got struct {
				Input []struct {
					CallID string          `json:"call_id"`
					Type   string          `json:"type"`
					Output json.RawMessage `json:"output"`
				} `json:"input"`
			}
			if err := json.Unmarshal(recs[len(recs)-1].Body, &got); err != nil {
				t.Fatal(err)
			}
			sent, before := "<missing>", "<missing>"
			for _, it := range got.Input {
				switch {
				case it.Type != "function_call_output":
				case it.CallID == "call_35":
					json.Unmarshal(it.Output, &sent)
				case it.CallID == "call_34":
					json.Unmarshal(it.Output, &before)
				}
			}
			switch {
			case tc.name != "a toolless request of another conversation" && !strings.Contains(before, "knowledge"):
				t.Fatalf("step 34's output, offloaded by the step, was sent as %.300q: want its reference again", before)
			case tc.whole && sent != out:
				t.Fatalf("the upstream received the new output as %.300q (%d chars): want it whole (%d)", sent, len(sent), len(out))
			case !tc.whole && (sent == out || !strings.Contains(sent, "knowledge")):
				t.Fatalf("the upstream received the output as %.300q (%d chars): want its reference", sent, len(sent))
			}
		})
	}
}

// codexRead is a read of about n characters: lines of numbers with value
// in the middle (where a reference's head and tail do not show it).
func codexRead(value string, n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		if b.Len() >= n/2 && value != "" {
			b.WriteString(value + "\n")
			value = ""
		}
		fmt.Fprintf(&b, "%05d %016x\n", i, uint64(i)*0x9e3779b97f4a7c15)
	}
	return b.String()
}
