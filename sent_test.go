package agentctx_test

import (
	"testing"

	"github.com/agentctx/agentctx"
)

// SentString gives the token of a result's string only when decoding it
// lost something (a lone surrogate escape); pairs, escaped backslashes and
// plain strings decode as sent (issue 49).
func TestSentString(t *testing.T) {
	tests := []struct {
		name, content string
		lossy         bool
	}{
		{"lone high half", `"a\ud800b"`, true},
		{"lone low half", `"\udc00"`, true},
		{"high half at the end", `"x\ud83d"`, true},
		{"high half before a non-surrogate escape", `"\ud83d\u0041"`, true},
		{"a pair", `"\ud83d\ude00"`, false},
		{"an escaped backslash before u", `"\\ud800"`, false},
		{"plain", `"hello\nworld"`, false},
		{"a literal replacement character", `"\ufffd"`, false},
		{"blocks", `[{"type":"text","text":"t"}]`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, shape := range []struct {
				msgs string
				msg  int
				blk  int
			}{
				{`[{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":` + tt.content + `}]}]`, 0, 0},
				{`[{"role":"tool","tool_call_id":"a","content":` + tt.content + `}]`, 0, -1},
			} {
				msgs := parseMsgs(t, shape.msgs)
				got, ok := agentctx.SentString(msgs[shape.msg], shape.blk)
				if ok != tt.lossy || (ok && string(got) != tt.content) {
					t.Errorf("%s: SentString = %q, %v; want lossy %v", shape.msgs, got, ok, tt.lossy)
				}
			}
		})
	}
	// Content set by code is not what was sent.
	msgs := parseMsgs(t, `[{"role":"tool","tool_call_id":"a","content":"a\ud800b"}]`)
	if got, ok := agentctx.SentString(msgs[0].WithContent(agentctx.Text("new")), -1); ok {
		t.Errorf("SentString of replaced content = %q", got)
	}
}
