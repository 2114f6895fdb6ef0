package proxy

import (
	"bytes"
	"testing"

	"github.com/agentctx/agentctx/internal/base/rawjson"
)

// TestToolMemoFromParts: the tools memo of a body forwarded as read, or
// with only its list replaced by parts (an edit: see sendBody), is the one
// a split of the body, joined, makes.
func TestToolMemoFromParts(t *testing.T) {
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
	els, err := rawjson.Elements(list)
	if err != nil {
		t.Fatal(err)
	}
	for name, parts := range map[string][][]byte{
		"as read":       {list},
		"list replaced": {[]byte(`[`), els[0], []byte(`,`), []byte(`{"type":"function_call_output","call_id":"c","output":"[cleared]"}`), []byte(`]`)},
		"list grown":    {[]byte(`[{"role":"user","content":"a"},{"role":"user","content":"b"}`), []byte(`,{"role":"user","content":"c"}]`)},
	} {
		sent := replaceParts(raw, span{value: list, parts: parts})
		var fast, split toolMemos
		fast.rememberParts(APIResponses, "s", tools, parts, nil)
		split.remember(APIResponses, "s", sent.Bytes(), nil)
		if fast.sessions["s"] != split.sessions["s"] || split.sessions["s"] == (toolMemo{}) {
			t.Errorf("%s: memo %+v, from a split %+v", name, fast.sessions["s"], split.sessions["s"])
		}
		if got := bytes.Join(parts, nil); !bytes.Contains(sent.Bytes(), got) {
			t.Errorf("%s: the body %s does not hold the list %s", name, sent.Bytes(), got)
		}
	}
}
