package proxy

import (
	"testing"

	"github.com/agentctx/agentctx/internal/base/rawjson"
)

// TestSentParts: the tools and list sentParts gives for a body forwarded
// as read, or with only its list replaced, are the members a split of
// that body finds, so the tools memo is the same either way; a body
// changed anywhere else is not read that way.
func TestSentParts(t *testing.T) {
	raw := []byte(`{"model":"m","store":false,"tools":[{"type":"function","name":"sh"}],"input":[{"role":"user","content":"a"},{"type":"function_call_output","call_id":"c","output":"long"}],"stream":true}`)
	ms, err := rawjson.Members(raw)
	if err != nil {
		t.Fatal(err)
	}
	var tools, list []byte
	for _, mb := range ms {
		switch mb.Key {
		case "tools":
			tools = mb.Value
		case "input":
			list = mb.Value
		}
	}
	splice := func(repl string) []byte {
		off := offsetIn(raw, list)
		out := append([]byte(nil), raw[:off]...)
		out = append(out, repl...)
		return append(out, raw[off+len(list):]...)
	}
	edited := splice(`[{"role":"user","content":"a"},{"type":"function_call_output","call_id":"c","output":"[cleared]"}]`)
	for name, sent := range map[string][]byte{"as read": raw, "list replaced": edited, "list grown": splice(`[{"role":"user","content":"a"},{"role":"user","content":"b"},{"role":"user","content":"c"}]`)} {
		st, sl, ok := sentParts(raw, sent, tools, list)
		if !ok {
			t.Fatalf("%s: not read", name)
		}
		var fast, split toolMemos
		fast.rememberParts(APIResponses, "s", st, sl)
		split.remember(APIResponses, "s", sent)
		if fast.sessions["s"] != split.sessions["s"] || split.sessions["s"] == (toolMemo{}) {
			t.Errorf("%s: memo %+v, from a split %+v", name, fast.sessions["s"], split.sessions["s"])
		}
	}
	for name, sent := range map[string][]byte{
		"model changed": append([]byte(`{"model":"n"`), edited[len(`{"model":"m"`):]...),
		"tail changed":  append(append([]byte(nil), edited[:len(edited)-len(`true}`)]...), `false}`...),
		"empty":         {},
	} {
		if _, _, ok := sentParts(raw, sent, tools, list); ok {
			t.Errorf("%s: read as the list replaced", name)
		}
	}
}
