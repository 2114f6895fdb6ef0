package tokens_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/tokens"
)

// TestToolCountsIgnoreLayout: the same tool definitions, compact or
// indented, count the same; whitespace inside their strings still counts.
func TestToolCountsIgnoreLayout(t *testing.T) {
	tools := []any{map[string]any{
		"name":        "Bash",
		"description": "Run a shell command.\n  Indented line kept.",
		"input_schema": map[string]any{
			"type":       "object",
			"properties": map[string]any{"command": map[string]any{"type": "string"}},
		},
	}}
	body := func(indent bool) []byte {
		v := map[string]any{"model": "m", "tools": tools, "messages": []any{map[string]any{"role": "user", "content": "hi"}}}
		var b []byte
		var err error
		if indent {
			b, err = json.MarshalIndent(v, "", "    ")
		} else {
			b, err = json.Marshal(v)
		}
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	mc := tokens.NewMessageCounter(tokens.MessageOptions{})
	count := func(b []byte) int {
		doc, err := agentctx.ParseDocument(context.Background(), b)
		if err != nil {
			t.Fatal(err)
		}
		return mc.CountRequestExtras(doc)
	}
	compact, indented := count(body(false)), count(body(true))
	if compact != indented {
		t.Fatalf("tools count %d compact, %d indented: want equal", compact, indented)
	}
	if compact == 0 {
		t.Fatal("tools not counted")
	}
}
