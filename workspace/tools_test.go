package workspace_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/agentctx/agentctx/workspace"
	"github.com/agentctx/agentctx/workspace/memstore"
)

func TestToolDefinitions(t *testing.T) {
	defs := workspace.New(memstore.New(), workspace.Options{}).Tools()
	want := []string{"get_knowledge_by_id", "get_knowledge_by_lines", "grep_knowledge", "grep_session_knowledge",
		"query_artifacts", "get_tool_result_offload_info"}
	if len(defs) != len(want) {
		t.Fatalf("%d tools", len(defs))
	}
	for i, d := range defs {
		if d.Name != want[i] || len(d.Description) < 40 {
			t.Errorf("tool %d: %q %q", i, d.Name, d.Description)
		}
		var schema struct {
			Type       string                     `json:"type"`
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
			Additional *bool                      `json:"additionalProperties"`
		}
		if err := json.Unmarshal(d.InputSchema, &schema); err != nil || schema.Type != "object" || schema.Additional == nil || *schema.Additional {
			t.Errorf("%s schema: %v %s", d.Name, err, d.InputSchema)
		}
		for _, r := range schema.Required {
			if _, ok := schema.Properties[r]; !ok {
				t.Errorf("%s: required %q is not a property", d.Name, r)
			}
		}
		// Anthropic shape: the definition itself.
		var anth map[string]json.RawMessage
		b, _ := json.Marshal(d)
		if json.Unmarshal(b, &anth) != nil || anth["input_schema"] == nil || len(anth) != 3 {
			t.Errorf("%s Anthropic JSON: %s", d.Name, b)
		}
		// OpenAI shape.
		var oai struct {
			Type     string `json:"type"`
			Function struct {
				Name       string          `json:"name"`
				Parameters json.RawMessage `json:"parameters"`
			} `json:"function"`
		}
		b, _ = json.Marshal(d.OpenAI())
		if json.Unmarshal(b, &oai) != nil || oai.Type != "function" || oai.Function.Name != d.Name || !sameJSON(oai.Function.Parameters, d.InputSchema) {
			t.Errorf("%s OpenAI JSON: %s", d.Name, b)
		}
	}
	if !strings.Contains(workspace.New(memstore.New(), workspace.Options{MaxChars: 5000}).Tools()[0].Description, "5,000 characters") {
		t.Errorf("descriptions do not state the workspace's read cap")
	}
	if len(workspace.Tools()) != len(defs) || len(workspace.New(memstore.New(), workspace.Options{}).OpenAITools()) != len(defs) {
		t.Errorf("Tools and OpenAITools disagree")
	}
}

func sameJSON(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

func TestExecute(t *testing.T) {
	ws := newWS(t, workspace.Options{SessionID: "s1"}, map[string]string{"tool_result_a": "one\ntwo ERROR\nthree\n"})
	ok := []struct {
		name, args, want string
	}{
		{"get_knowledge_by_id", `{"artifact_id":"tool_result_a"}`, "one\ntwo ERROR\nthree\n"},
		{"get_knowledge_by_id", `{"artifact_id":"tool_result_a","offset":4}`, "two ERROR\nthree\n"},
		{"get_knowledge_by_id", `"{\"artifact_id\":\"tool_result_a\"}"`, "one\ntwo ERROR\nthree\n"}, // double-encoded
		{"get_knowledge_by_lines", `{"artifact_id":"tool_result_a","start_line":2,"end_line":9}`, "Lines 2-3 of 3\ntwo ERROR\nthree"},
		{"get_knowledge_by_lines", `{"artifact_id":"tool_result_a","start_line":"2","end_line":2.0}`, "Lines 2-2 of 3\ntwo ERROR"},
		{"grep_knowledge", `{"artifact_id":"tool_result_a","pattern":"error","ignore_case":true,"context_lines":1}`, "1-one\n2:two ERROR\n3-three"},
		{"grep_session_knowledge", `{"pattern":"thr"}`, "tool_result_a:3:three"},
		{"grep_session_knowledge", `{"pattern":"thr","session_id":"s2"}`, `No lines match "thr" in 0 offloaded tool results.`},
		{"get_tool_result_offload_info", `{}`, ""},
		{"get_tool_result_offload_info", ``, ""},
		{"get_tool_result_offload_info", `null`, ""},
		{"query_artifacts", `{"filter":{"biz_id":"a"},"limit":5}`, ""},
	}
	for _, c := range ok {
		got, err := ws.Execute(ctx, c.name, json.RawMessage(c.args))
		if err != nil || c.want != "" && got != c.want || c.want == "" && !strings.HasPrefix(got, "[\n{") {
			t.Errorf("%s(%s):\n got %q %v\nwant %q", c.name, c.args, got, err, c.want)
		}
	}
	bad := []struct {
		name, args string
		want       error
		text       string
	}{
		{"rm_rf", `{}`, workspace.ErrUnknownTool, `Error: rm_rf: unknown tool "rm_rf": the workspace tools are get_knowledge_by_id,`},
		{"get_knowledge_by_id", `[]`, workspace.ErrInvalidArguments, "Error: get_knowledge_by_id: invalid tool arguments: arguments must be a JSON object with the keys artifact_id, offset"},
		{"get_knowledge_by_id", `42`, workspace.ErrInvalidArguments, "must be a JSON object"},
		{"get_knowledge_by_id", `{"artifact_id":`, workspace.ErrInvalidArguments, "must be a JSON object"},
		{"get_knowledge_by_id", `{}`, workspace.ErrInvalidArguments, "artifact_id is required"},
		{"get_knowledge_by_id", `{"artifact_id":null}`, workspace.ErrInvalidArguments, "artifact_id is required"},
		{"get_knowledge_by_id", `{"artifact_id":""}`, workspace.ErrInvalidArguments, "artifact_id must not be empty"},
		{"get_knowledge_by_id", `{"artifact_id":5}`, workspace.ErrInvalidArguments, "artifact_id must be a string, got 5"},
		{"get_knowledge_by_id", `{"id":"tool_result_a"}`, workspace.ErrInvalidArguments, `unknown argument "id"; the arguments are artifact_id, offset`},
		{"get_knowledge_by_id", `{"artifact_id":"tool_result_a","offset":-1}`, workspace.ErrInvalidArguments, "offset must be at least 0, got -1"},
		{"get_knowledge_by_id", `{"artifact_id":"tool_result_a","offset":99}`, workspace.ErrInvalidRange, "offset 99 is beyond the end (20 characters)"},
		{"get_knowledge_by_id", `{"artifact_id":"tool_result_zz"}`, workspace.ErrNotFound, `no artifact "tool_result_zz" in this workspace (namespace "default"); get_tool_result_offload_info lists the stored tool results`},
		{"get_knowledge_by_lines", `{"artifact_id":"tool_result_a","start_line":1}`, workspace.ErrInvalidArguments, "end_line is required"},
		{"get_knowledge_by_lines", `{"artifact_id":"tool_result_a","start_line":0,"end_line":1}`, workspace.ErrInvalidArguments, "start_line must be at least 1, got 0"},
		{"get_knowledge_by_lines", `{"artifact_id":"tool_result_a","start_line":1.5,"end_line":2}`, workspace.ErrInvalidArguments, "start_line must be an integer, got 1.5"},
		{"get_knowledge_by_lines", `{"artifact_id":"tool_result_a","start_line":"two","end_line":2}`, workspace.ErrInvalidArguments, `start_line must be an integer, got "two"`},
		{"get_knowledge_by_lines", `{"artifact_id":"tool_result_a","start_line":1e300,"end_line":2}`, workspace.ErrInvalidArguments, "must be an integer"},
		{"get_knowledge_by_lines", `{"artifact_id":"tool_result_a","start_line":4,"end_line":9}`, workspace.ErrInvalidRange, "invalid line range: start line 4 is beyond the end (3 lines)"},
		{"get_knowledge_by_lines", `{"artifact_id":"tool_result_a","start_line":3,"end_line":2}`, workspace.ErrInvalidRange, "start line 3 is after end line 2"},
		{"grep_knowledge", `{"artifact_id":"tool_result_a","pattern":"(?<=x)"}`, workspace.ErrInvalidPattern, "invalid pattern: error parsing regexp"},
		{"grep_knowledge", `{"artifact_id":"tool_result_a"}`, workspace.ErrInvalidArguments, "pattern is required"},
		{"grep_knowledge", `{"artifact_id":"tool_result_a","pattern":"x","ignore_case":"yes"}`, workspace.ErrInvalidArguments, `ignore_case must be true or false, got "yes"`},
		{"grep_knowledge", `{"artifact_id":"tool_result_a","pattern":"x","max_results":0}`, workspace.ErrInvalidArguments, "max_results must be at least 1"},
		{"query_artifacts", `{"filter":"context_type=tool_result"}`, workspace.ErrInvalidArguments, "filter must be an object of strings"},
		{"query_artifacts", `{"filter":{"a":{"b":1}}}`, workspace.ErrInvalidArguments, "filter.a must be a string"},
	}
	for _, c := range bad {
		got, err := ws.Execute(ctx, c.name, json.RawMessage(c.args))
		if !errors.Is(err, c.want) {
			t.Errorf("%s(%s): error %v, want %v", c.name, c.args, err, c.want)
		}
		if !strings.HasPrefix(got, "Error: "+c.name+": ") || !strings.Contains(got, c.text) || strings.Contains(got, "\n") {
			t.Errorf("%s(%s): text for the model:\n got %q\nwant it to contain %q", c.name, c.args, got, c.text)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if got, err := ws.Execute(cctx, "get_knowledge_by_id", json.RawMessage(`{"artifact_id":"tool_result_a"}`)); !errors.Is(err, context.Canceled) || got != "Error: get_knowledge_by_id: context canceled" {
		t.Errorf("cancelled: %q %v", got, err)
	}
}

func FuzzExecute(f *testing.F) {
	names := []string{"get_knowledge_by_id", "get_knowledge_by_lines", "grep_knowledge", "grep_session_knowledge",
		"query_artifacts", "get_tool_result_offload_info", "other"}
	f.Add(uint8(0), `{"artifact_id":"tool_result_a","offset":3}`)
	f.Add(uint8(1), `{"artifact_id":"tool_result_a","start_line":1,"end_line":2}`)
	f.Add(uint8(2), `{"artifact_id":"tool_result_a","pattern":"o+","context_lines":1000000}`)
	f.Add(uint8(3), `{"pattern":"(a|b)*c","max_results":"3"}`)
	f.Add(uint8(4), `{"filter":{"x":1},"offset":1e9}`)
	f.Add(uint8(5), `"\"{}\""`)
	f.Add(uint8(6), `{}`)
	store := memstore.New()
	ws := workspace.New(store, workspace.Options{MaxChars: 300})
	store.Put(context.Background(), "default", workspace.Artifact{Info: workspace.Info{ID: "tool_result_a"}, Content: strings.Repeat("one\ntwo ✓ three\n", 40)})
	f.Fuzz(func(t *testing.T, n uint8, args string) {
		name := names[int(n)%len(names)]
		got, err := ws.Execute(context.Background(), name, json.RawMessage(args))
		if err != nil && (!strings.HasPrefix(got, "Error: ") || strings.Contains(got, "\n")) {
			t.Errorf("error text %q", got)
		}
	})
}
