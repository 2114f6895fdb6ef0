package proxy_test

import (
	"encoding/json"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/testkit/fakeupstream"
	"github.com/agentctx/agentctx/proxy"
)

// anthropicTurn sends a request straight to the fake and returns the
// assistant message it answers with, as raw JSON.
func anthropicTurn(t *testing.T, url, body string) json.RawMessage {
	t.Helper()
	resp := post(t, url+"/v1/messages", body, nil)
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, data)
	}
	var m struct {
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return json.RawMessage(`{"role":"assistant","content":` + string(m.Content) + `}`)
}

func body(msgs ...string) string {
	return `{"model":"m","max_tokens":10,"thinking":{"type":"adaptive"},"system":"sys","messages":[` + strings.Join(msgs, ",") + `]}`
}

// editFirst is an Engine that replaces the text of the first message, the
// way a compaction changes the beginning of a history.
func editFirst() *funcEngine {
	return &funcEngine{prepare: func(req *proxy.Request) []agentctx.Message {
		out := append([]agentctx.Message(nil), req.Document.Messages...)
		out[0] = out[0].WithContent(agentctx.Text("EDITED"))
		return out
	}}
}

// The fake enforces the prefix rule, so these tests fail if the proxy
// sends a request the API would reject.
func TestSignedThinkingPrefixRule(t *testing.T) {
	fake := fakeupstream.New(fakeupstream.Options{Script: func(c *fakeupstream.Call) fakeupstream.Reply {
		if strings.Contains(c.AllText, "call a tool") && len(c.Results) == 0 {
			return fakeupstream.Reply{Thinking: "I should call", ToolCalls: []fakeupstream.ToolCall{{Name: "Bash", Input: map[string]any{"command": "ls"}}}}
		}
		return fakeupstream.Reply{Thinking: "thinking", Text: "answer"}
	}})
	direct := httptest.NewServer(fake)
	defer direct.Close()

	u1 := `{"role":"user","content":"first question"}`
	a1 := anthropicTurn(t, direct.URL, body(u1))
	u2 := `{"role":"user","content":"second question"}`

	// The fake rejects an edited prefix before a signed block.
	edited := body(`{"role":"user","content":"EDITED"}`, string(a1), u2)
	if resp := post(t, direct.URL+"/v1/messages", edited, nil); resp.StatusCode != 400 {
		t.Fatalf("the fake accepted a changed prefix before a signed thinking block (status %d)", resp.StatusCode)
	}

	t.Run("completed turn loses its thinking", func(t *testing.T) {
		base := newProxy(t, fake, editFirst())
		resp := post(t, base+"/v1/messages", body(u1, string(a1), u2), nil)
		data, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, data)
		}
		last := fake.Records()[len(fake.Records())-1]
		if !strings.Contains(string(last.Body), "EDITED") || strings.Contains(string(last.Body), `"thinking":"thinking"`) {
			t.Errorf("want the edit sent and the invalid thinking removed:\n%s", last.Body)
		}
	})

	t.Run("an edit before the open turn asks the API to drop its thinking", func(t *testing.T) {
		u := `{"role":"user","content":"please call a tool"}`
		a := anthropicTurn(t, direct.URL, body(u))
		var am struct {
			Content []map[string]any `json:"content"`
		}
		json.Unmarshal(a, &am)
		id := am.Content[len(am.Content)-1]["id"].(string)
		res := `{"role":"user","content":[{"type":"tool_result","tool_use_id":"` + id + `","content":"files"}]}`
		req := body(u, string(a), res)
		base := newProxy(t, fake, editFirst())
		resp := post(t, base+"/v1/messages", req, nil)
		data, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, data)
		}
		// The edit is sent (the engine's edits are sticky: postponing it
		// would let the context grow), with the documented control and
		// its beta, and the open turn keeps its thinking block.
		last := fake.Records()[len(fake.Records())-1]
		// (The fake upstream rejects drop_block without its beta.)
		if string(last.Body) == req || !strings.Contains(string(last.Body), `"prefix_mismatch_behavior":"drop_block"`) ||
			last.Rejected != "" || !strings.Contains(string(last.Body), `"type":"thinking"`) {
			t.Errorf("want the edited request with drop_block and its beta (rejected: %q):\n%s", last.Rejected, last.Body)
		}
	})

	t.Run("a block produced after an edit stays valid", func(t *testing.T) {
		base := newProxy(t, fake, editFirst())
		// Request 1 is edited; the answer's thinking is produced after
		// the edited prefix.
		resp := post(t, base+"/v1/messages", strings.Replace(body(u1), `"max_tokens"`, `"stream":true,"max_tokens"`, 1), nil)
		stream, _ := io.ReadAll(resp.Body)
		sig := between(string(stream), `"signature":"`, `"`)
		if sig == "" {
			t.Fatalf("no signature in the stream:\n%s", stream)
		}
		a := `{"role":"assistant","content":[{"type":"thinking","thinking":"thinking","signature":"` + sig + `"},{"type":"text","text":"answer"}]}`
		resp = post(t, base+"/v1/messages", body(u1, a, u2), nil)
		data, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, data)
		}
		if last := fake.Records()[len(fake.Records())-1]; !strings.Contains(string(last.Body), sig) {
			t.Errorf("the valid thinking block was removed:\n%s", last.Body)
		}
	})
}

func between(s, a, b string) string {
	i := strings.Index(s, a)
	for i >= 0 {
		rest := s[i+len(a):]
		j := strings.Index(rest, b)
		if j > 0 {
			return rest[:j]
		}
		k := strings.Index(rest, a)
		if k < 0 {
			return ""
		}
		i += len(a) + k
	}
	return ""
}

func TestAtMostFourBreakpointsAfterAnEdit(t *testing.T) {
	cc := `"cache_control":{"type":"ephemeral"}`
	mk := func(n int) string {
		sys := `[{"type":"text","text":"a"` + "," + cc + `}]`
		msgs := []string{
			`{"role":"user","content":"go"}`,
			`{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{}}]}`,
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"long output"}]}`,
			`{"role":"assistant","content":[{"type":"text","text":"x"}]}`,
		}
		last := `{"role":"user","content":[{"type":"text","text":"y"` + "," + cc + `}]}`
		if n == 4 {
			msgs[3] = `{"role":"assistant","content":[{"type":"text","text":"x",` + cc + `}]}`
			msgs[0] = `{"role":"user","content":[{"type":"text","text":"go",` + cc + `}]}`
		}
		return `{"model":"m","system":` + sys + `,"messages":[` + strings.Join(append(msgs, last), ",") + `]}`
	}
	fake := fakeupstream.New(fakeupstream.Options{})
	eng := &funcEngine{prepare: func(req *proxy.Request) []agentctx.Message {
		return agentctx.MapToolResults(req.Document.Messages, func(agentctx.ToolResult) (agentctx.Content, bool) {
			return agentctx.Text("ref"), true
		})
	}}
	base := newProxy(t, fake, eng)
	for _, n := range []int{2, 4} {
		resp := post(t, base+"/v1/messages", mk(n), nil)
		data, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("%d breakpoints: status %d: %s", n, resp.StatusCode, data)
		}
		sent := string(fake.Records()[len(fake.Records())-1].Body)
		got := strings.Count(sent, `"cache_control":{`)
		want := n + 1
		if n == 4 {
			want = 4
		}
		if got != want {
			t.Errorf("client sent %d breakpoints; upstream saw %d, want %d:\n%s", n, got, want, sent)
		}
		if !strings.Contains(sent, `"content":"ref"`) {
			t.Errorf("the edit was not sent")
		}
	}
}

// When the open turn's thinking was produced after an edit the Engine does
// not repeat, no request passes the prefix check as is: the proxy asks the
// API to drop the invalid block (the documented control) with its beta.
func TestSignedThinkingDropBlockWhenNothingPasses(t *testing.T) {
	fake := fakeupstream.New(fakeupstream.Options{Script: func(c *fakeupstream.Call) fakeupstream.Reply {
		if len(c.Results) == 0 {
			return fakeupstream.Reply{Thinking: "call", ToolCalls: []fakeupstream.ToolCall{{Name: "Bash", Input: map[string]any{"command": "ls"}}}}
		}
		return fakeupstream.Reply{Text: "done"}
	}})
	n := 0
	eng := &funcEngine{prepare: func(req *proxy.Request) []agentctx.Message {
		n++
		out := append([]agentctx.Message(nil), req.Document.Messages...)
		out[0] = out[0].WithContent(agentctx.Text(strings.Repeat("EDITED ", n)))
		return out
	}}
	up := &capture{handler: fake.ServeHTTP}
	base := newProxy(t, up, eng)
	u := `{"role":"user","content":"please call a tool"}`
	resp := post(t, base+"/v1/messages", body(u), nil)
	data, _ := io.ReadAll(resp.Body)
	var first struct {
		Content json.RawMessage `json:"content"`
	}
	json.Unmarshal(data, &first)
	var blocks []map[string]any
	json.Unmarshal(first.Content, &blocks)
	id := blocks[len(blocks)-1]["id"].(string)
	a := `{"role":"assistant","content":` + string(first.Content) + `}`
	res := `{"role":"user","content":[{"type":"tool_result","tool_use_id":"` + id + `","content":"files"}]}`
	resp = post(t, base+"/v1/messages", body(u, a, res), map[string]string{"Anthropic-Beta": "other-beta"})
	data, _ = io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, data)
	}
	r, sent := up.last(t)
	if !strings.Contains(string(sent), `"block_binding":{"prefix_mismatch_behavior":"drop_block"}`) || r.Header.Get("Anthropic-Beta") != "other-beta,"+proxy.ThinkingBindingBeta {
		t.Errorf("want drop_block and its beta; beta %q, body:\n%s", r.Header.Get("Anthropic-Beta"), sent)
	}
}
