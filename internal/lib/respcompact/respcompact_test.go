package respcompact_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/internal/lib/respcompact"
	"github.com/agentctx/agentctx/internal/testkit/fakeupstream"
)

func TestSplit(t *testing.T) {
	window := []json.RawMessage{json.RawMessage(`{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}`),
		json.RawMessage(`{"type":"compaction","id":"cmp_1","encrypted_content":"x"}`)}
	sum, err := respcompact.Summary(window)
	if err != nil {
		t.Fatal(err)
	}
	withPointers := compact.WithPointers(sum, []compact.Pointer{{Kind: compact.PointerArchive, ArtifactID: "compact_1", Path: "/a/compact_1.txt", Messages: 3}})
	for _, tc := range []struct {
		name, text string
		items      int
		rest       string
	}{
		{"summary", sum, 2, compact.SummaryTitle + "\n\n" + respcompact.Note},
		{"with pointers", withPointers, 2, "## Stored originals"},
		{"plain text", "# Summary of the earlier conversation\n\nsomething", 0, "something"},
		{"no compaction item", respcompact.Marker + `[{"type":"message"}]` + respcompact.MarkerEnd, 0, respcompact.Marker},
		{"cut marker", respcompact.Marker + `[{"type":"compaction"`, 0, respcompact.Marker},
		{"bad JSON", respcompact.Marker + `[{` + respcompact.MarkerEnd, 0, respcompact.Marker},
	} {
		items, rest, ok := respcompact.Split(tc.text)
		if len(items) != tc.items || ok != (tc.items > 0) || !strings.Contains(rest, tc.rest) {
			t.Errorf("%s: %d items, ok %v, rest %q", tc.name, len(items), ok, rest)
		}
		if ok && strings.Contains(rest, respcompact.Marker) {
			t.Errorf("%s: the marker stayed in the text", tc.name)
		}
	}
}

func TestItems(t *testing.T) {
	sum, _ := respcompact.Summary([]json.RawMessage{json.RawMessage(`{"type":"compaction","encrypted_content":"e"}`)})
	asst := agentctx.NewMessage(agentctx.RoleAssistant, agentctx.Text("looking"))
	asst.ToolCalls = []agentctx.ToolCall{{ID: "c1", Type: "function", Function: agentctx.FunctionCall{Name: "shell", Arguments: `{"cmd":"ls"}`}}}
	res := agentctx.NewMessage(agentctx.RoleTool, agentctx.Text("a b"))
	res.ToolCallID = "c1"
	msgs := []agentctx.Message{
		agentctx.NewMessage(agentctx.RoleSystem, agentctx.Text("rules")),
		agentctx.NewMessage(agentctx.RoleUser, agentctx.Text(sum)),
		agentctx.NewMessage(agentctx.RoleUser, agentctx.Text("do it")),
		asst, res,
	}
	items, err := respcompact.Items(msgs, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range items {
		var v map[string]any
		json.Unmarshal(it, &v)
		got = append(got, strings.TrimSpace(v["type"].(string)+" "+str(v["role"])+str(v["call_id"])))
	}
	want := "message developer|compaction|message user|message user|message assistant|function_call c1|function_call_output c1"
	if strings.Join(got, "|") != want {
		t.Errorf("items %s\nwant  %s", strings.Join(got, "|"), want)
	}
	if stripped := respcompact.Strip(msgs); strings.Contains(stripped[1].Content.Text(), respcompact.Marker) || !strings.Contains(msgs[1].Content.Text(), respcompact.Marker) {
		t.Errorf("Strip: %q (the original must stay)", stripped[1].Content.Text())
	}
}

func str(v any) string { s, _ := v.(string); return s }

func TestCompact(t *testing.T) {
	fake := fakeupstream.New(fakeupstream.Options{})
	up := httptest.NewServer(fake)
	defer up.Close()
	in := []json.RawMessage{json.RawMessage(`{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}`)}
	h := http.Header{"Authorization": {"Bearer sk-secret-secret"}}
	res, err := respcompact.Compact(context.Background(), nil, respcompact.Request{BaseURL: up.URL + "/", Header: h, Model: "m", Input: in})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Window) != 2 || !strings.Contains(string(res.Body), `"usage"`) {
		t.Errorf("window %d items, body %s", len(res.Window), res.Body)
	}
	_, err = respcompact.Compact(context.Background(), nil, respcompact.Request{BaseURL: up.URL, Header: h, Input: in})
	var e *respcompact.Error
	if !errors.As(err, &e) || e.StatusCode != 400 || strings.Contains(err.Error(), "sk-secret") {
		t.Errorf("no model: %v", err)
	}
}

func TestItemsFit(t *testing.T) {
	out := func(id string, n int) agentctx.Message {
		m := agentctx.NewMessage(agentctx.RoleTool, agentctx.Text(strings.Repeat("é", n/2)))
		m.ToolCallID = id
		return m
	}
	asst := agentctx.NewMessage(agentctx.RoleAssistant, agentctx.Text(""))
	asst.ToolCalls = []agentctx.ToolCall{{ID: "a", Function: agentctx.FunctionCall{Name: "sh"}}, {ID: "b", Function: agentctx.FunctionCall{Name: "sh"}}}
	msgs := []agentctx.Message{agentctx.NewMessage(agentctx.RoleUser, agentctx.Text("task")), asst, out("a", 100_000), out("b", 200)}
	for _, tc := range []struct {
		max      int
		cut      bool
		maxBytes int
	}{
		{0, false, 0},
		{200_000, false, 0},
		{5_000, true, 5_000 + 200},
	} {
		items, err := respcompact.Items(msgs, tc.max)
		if err != nil {
			t.Fatal(err)
		}
		var texts int
		var long, short string
		for _, it := range items {
			var v map[string]any
			if err := json.Unmarshal(it, &v); err != nil {
				t.Fatalf("max %d: %v", tc.max, err)
			}
			if o, ok := v["output"].(string); ok {
				texts += len(o)
				if v["call_id"] == "a" {
					long = o
				} else {
					short = o
				}
			}
		}
		if got := strings.Contains(long, "left out"); got != tc.cut {
			t.Errorf("max %d: cut %v, want %v", tc.max, got, tc.cut)
		}
		if len(short) != 200 {
			t.Errorf("max %d: the short output was cut to %d bytes", tc.max, len(short))
		}
		if tc.maxBytes > 0 && texts > tc.maxBytes {
			t.Errorf("max %d: %d bytes of output sent", tc.max, texts)
		}
	}
}
