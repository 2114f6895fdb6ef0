package agentctx_test

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/base/rawjson"
)

// ownedCases are messages of every shape: Anthropic blocks of each type,
// OpenAI tool calls, strings with and without escapes written in other
// ways than JSON.stringify's (\u00e9, \/), unknown members, content that is
// neither text nor blocks.
var ownedCases = []string{
	`{"role":"user","content":"plain"}`,
	`{"role":"user","content":"caf\u00e9 \/ \"q\" \n"}`,
	`{"role":"assistant","content":[{"type":"text","text":"a\nb","cache_control":{"type":"ephemeral","ttl":"1h"}},{"type":"thinking","thinking":"hm","signature":"c2ln"},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls  -la"}}]}`,
	`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"out\u0041"},{"type":"image","source":{"type":"base64","data":"AAAA"}}],"is_error":false}]}`,
	`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"x\ty","is_error":true}],"extra":[1,2,{"a":"b"}]}`,
	`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]}`,
	`{"role":"tool","tool_call_id":"c1","content":"done"}`,
	`{"role":"tool","tool_call_ids":["c1"],"content":[{"type":"text","text":"x"}]}`,
	`{"role":"user","content":{"weird":true}}`,
	`{"role":"user","content":[1,2]}`,
	`{"role" : "user" , "content" : [ {"type" : "text" , "text" : "spaced"} ] }`,
	`{"role":"assistant","content":[{"type":"redacted_thinking","data":"Zm9v"},{"type":"server_tool_use","id":"s","name":"web_search","input":{}}]}`,
}

func TestDecodeOwnedMessageEncodesAlike(t *testing.T) {
	cases := append([]string(nil), ownedCases...)
	if data, err := os.ReadFile(filepath.Join("testdata", "anthropic_request.json")); err == nil {
		if ms, err := rawjson.Members(data); err == nil {
			for _, m := range ms {
				if m.Key == "messages" {
					els, _ := rawjson.Elements(m.Value)
					for _, el := range els {
						cases = append(cases, string(el))
					}
				}
			}
		}
	}
	for _, c := range cases {
		raw := []byte(c)
		want, err := agentctx.DecodeMessage(bytes.Clone(raw))
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		got, err := agentctx.DecodeOwnedMessage(raw)
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		for i := range raw {
			raw[i] = 'X' // the owned message must not see it
		}
		a, err1 := want.AppendJSON(nil)
		b, err2 := got.AppendJSON(nil)
		if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
			t.Fatalf("%s:\nowned encodes %s (%v)\nnot %s (%v)", c, b, err2, a, err1)
		}
		// Fields, counted text and edits read the same.
		for _, k := range []string{"extra", "tool_call_ids", "content", "role"} {
			x, okx := want.Field(k)
			y, oky := got.Field(k)
			if okx != oky || !bytes.Equal(x, y) {
				t.Errorf("%s: Field(%q) = %s %v, want %s %v", c, k, y, oky, x, okx)
			}
		}
		if want.Content.AsText() != got.Content.AsText() {
			t.Errorf("%s: content text differs", c)
		}
		for i, bw := range want.Content.Blocks() {
			bg := got.Content.Blocks()[i]
			for _, k := range []string{"signature", "cache_control", "source", "data"} {
				x, _ := bw.Field(k)
				y, _ := bg.Field(k)
				if !bytes.Equal(x, y) {
					t.Errorf("%s: block %d Field(%q) = %s, want %s", c, i, k, y, x)
				}
			}
			if !bytes.Equal(bw.Input, bg.Input) {
				t.Errorf("%s: block %d input %s, want %s", c, i, bg.Input, bw.Input)
			}
		}
		edited := got.WithContent(agentctx.Text("replaced"))
		ew, _ := want.WithContent(agentctx.Text("replaced")).AppendJSON(nil)
		eg, _ := edited.AppendJSON(nil)
		if !bytes.Equal(ew, eg) {
			t.Errorf("%s: edited owned message encodes %s, want %s", c, eg, ew)
		}
	}
}

func FuzzDecodeOwnedMessage(f *testing.F) {
	for _, c := range ownedCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		want, err := agentctx.DecodeMessage(bytes.Clone(raw))
		got, err2 := agentctx.DecodeOwnedMessage(bytes.Clone(raw))
		if (err == nil) != (err2 == nil) {
			t.Fatalf("errors differ: %v / %v", err, err2)
		}
		if err != nil {
			return
		}
		a, e1 := want.AppendJSON(nil)
		b, e2 := got.AppendJSON(nil)
		if (e1 == nil) != (e2 == nil) || !bytes.Equal(a, b) {
			t.Fatalf("owned encodes %s (%v), not %s (%v)", b, e2, a, e1)
		}
	})
}

// allocatedBy returns the bytes f allocates.
func allocatedBy(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// TestDecodeOwnedMessageCopiesALargeResultOnce holds the decoding of a
// message with one large tool result (issue 24) to about one copy of its
// text: the string decoded, no encoding written to be compared, no copy of
// the content's JSON made to be dropped. It allocated 8 times the message
// before.
func TestDecodeOwnedMessageCopiesALargeResultOnce(t *testing.T) {
	for _, content := range []string{
		`"` + strings.Repeat(`drwxr-xr-x  2 root root 4096 Nov 23 file.go ok\n`, 1<<15) + `"`,
		`[{"type":"text","text":"` + strings.Repeat(`line of output\n`, 1<<16) + `"}]`,
	} {
		raw := []byte(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":` + content + `}]}`)
		var m agentctx.Message
		n := allocatedBy(func() {
			var err error
			if m, err = agentctx.DecodeOwnedMessage(raw); err != nil {
				t.Fatal(err)
			}
		})
		if limit := uint64(len(raw)) * 3 / 2; n > limit {
			t.Errorf("decoding a %d-byte message allocated %d bytes (%.1f×), want at most 1.5×", len(raw), n, float64(n)/float64(len(raw)))
		}
		enc, err := m.AppendJSON(nil)
		if err != nil || string(enc) != string(raw) {
			t.Fatalf("the message does not encode as it came (err %v)", err)
		}
	}
}
