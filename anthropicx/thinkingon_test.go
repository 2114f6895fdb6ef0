package anthropicx

import (
	"testing"

	"github.com/agentctx/agentctx"
)

// TestThinkingOn reads the request's "thinking" member from the decoded
// document: on for an object whose type is not "disabled", the last of a
// repeated key counting (as the proxy and encoding/json read it).
func TestThinkingOn(t *testing.T) {
	for _, c := range []struct {
		body string
		want bool
	}{
		{`{"messages":[]}`, false},
		{`{"messages":[],"thinking":{"type":"enabled","budget_tokens":2048}}`, true},
		{`{"thinking":{"type":"adaptive"},"messages":[]}`, true},
		{`{"messages":[],"thinking":{"type":"disabled"}}`, false},
		{`{"messages":[],"thinking":{"type":"dis\u0061bled"}}`, false},
		{`{"messages":[],"thinking":{"budget_tokens":2048}}`, true},
		{`{"messages":[],"thinking":{}}`, true},
		{`{"messages":[],"thinking":null}`, false},
		{`{"messages":[],"thinking":true}`, false},
		{`{"messages":[],"thinking":"enabled"}`, false},
		{`{"messages":[{"role":"user","content":"x","thinking":{"type":"enabled"}}]}`, false},
		{`{"messages":[],"metadata":{"thinking":{"type":"enabled"}}}`, false},
		{`{"messages":[],"thinking":{"type":"enabled"},"thinking":{"type":"disabled"}}`, false},
		{`{"messages":[],"thinking":{"type":"disabled"},"thinking":{"type":"enabled"}}`, true},
		{`{"messages":[],"thinking":{"type":"disabled","type":"enabled"}}`, true},
	} {
		doc, err := agentctx.ParseDocument(t.Context(), []byte(c.body))
		if err != nil {
			t.Fatalf("%s: %v", c.body, err)
		}
		if got := thinkingOn(doc); got != c.want {
			t.Errorf("thinkingOn(%s) = %v, want %v", c.body, got, c.want)
		}
		if got := thinkingOn(doc.WithMessages(nil)); got != c.want {
			t.Errorf("thinkingOn(%s) of the cut document = %v, want %v", c.body, got, c.want)
		}
	}
}
