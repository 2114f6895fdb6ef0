package agentctx_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/base/rawjson"
	"github.com/agentctx/agentctx/internal/testkit/memtest"
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
	`{"role":"assistant","content":"x","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}","x":1},"index":0},{"id":"c2","type":"function","function":"odd"}]}`,
	`{"role":"assistant","content":"x","tool_calls":null}`,
	`{"role":"tool","tool_call_id":"c1","content":"done"}`,
	`{"role":"tool","tool_call_ids":["c1"],"content":[{"type":"text","text":"x"}]}`,
	`{"role":"user","content":{"weird":true}}`,
	`{"role":"user","content":true}`,
	`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":false,"is_error":true}]}`,
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
		decodesInOneCopy(t, "DecodeOwnedMessage", raw, agentctx.DecodeOwnedMessage)
	}
}

// decodesInOneCopy checks that decode allocates at most 1.5 times raw
// and gives a message that encodes as raw.
func decodesInOneCopy(t *testing.T, name string, raw []byte, decode func([]byte) (agentctx.Message, error)) {
	t.Helper()
	var m agentctx.Message
	n := memtest.AllocatedBy(func() {
		var err error
		if m, err = decode(raw); err != nil {
			t.Fatal(err)
		}
	})
	if limit := uint64(len(raw)) * 3 / 2; n > limit {
		t.Errorf("%s: decoding a %d-byte message allocated %d bytes (%.1f×), want at most 1.5×", name, len(raw), n, float64(n)/float64(len(raw)))
	}
	enc, err := m.AppendJSON(nil)
	if err != nil || string(enc) != string(raw) {
		t.Fatalf("%s: the message does not encode as it came (err %v)", name, err)
	}
}

// TestDecodeOwnedToolCallsCopyArgumentsOnce holds the decoding of an
// OpenAI assistant message with large call arguments to about one copy of
// them: the message's "tool_calls" array and each call's "function" object
// were kept as written besides the decoded Arguments, three copies of
// every call's arguments (5 MB of 10 MB of OpenHands' turns).
func TestDecodeOwnedToolCallsCopyArgumentsOnce(t *testing.T) {
	args := string(rawjson.AppendString(nil, `{"path": "/workspace/main.go", "file_text": "`+strings.Repeat(`package main\n\nfunc main() {}\n`, 1<<12)+`"}`))
	raw := []byte(`{"role":"assistant","content":"Writing it.","tool_calls":[{"id":"call_1","type":"function","function":{"name":"str_replace_editor","arguments":` + args + `}}]}`)
	decodesInOneCopy(t, "DecodeOwnedMessage", raw, agentctx.DecodeOwnedMessage)
	decodesInOneCopy(t, "OwnedDecoder", raw, new(agentctx.OwnedDecoder).Decode)
}

// encodesAsCases are messages whose strings and values are large enough
// that EncodesAs compares them in place: a canonical string, a string
// written with escapes JSON.stringify does not use (kept as written), a
// tool input with and without insignificant whitespace, an unknown member.
func encodesAsCases() []string {
	bigJSON := string(rawjson.AppendString(nil, encodesAsBig))
	escaped := strings.Repeat(`caf\u00e9 \/ `, 800)
	input := `{"command":` + bigJSON + `,"list":[` + strings.Repeat(`1,`, 3000) + `2]}`
	spaced := `{ "command" : ` + bigJSON + ` , "n" : [ 1 , 2 ] }`
	return []string{
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":` + bigJSON + `}]}`,
		`{"role":"user","content":"` + escaped + `"}`,
		`{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":` + input + `}]}`,
		`{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":` + spaced + `}]}`,
		`{"role":"user","content":"x","extra":` + input + `}`,
		`{"role":"tool","tool_call_id":"c1","content":` + bigJSON + `}`,
	}
}

// encodesAsBig is the large string of encodesAsCases.
var encodesAsBig = strings.Repeat("drwxr-xr-x 2 root root 4096 file.go \"ok\"\n", 400)

// TestEncodesAs holds EncodesAs to AppendJSON: a message encodes as given
// bytes exactly when AppendJSON writes them, for its own encoding, its
// input (which it is when the input was compact), and the encoding with a
// byte changed anywhere, cut short, run on, or with its large string left
// out or written twice.
func TestEncodesAs(t *testing.T) {
	for _, c := range append(encodesAsCases(), ownedCases...) {
		for _, owned := range []bool{false, true} {
			decode := agentctx.DecodeMessage
			if owned {
				decode = agentctx.DecodeOwnedMessage
			}
			m, err := decode([]byte(c))
			if err != nil {
				t.Fatalf("%.80s: %v", c, err)
			}
			enc, err := m.AppendJSON(nil)
			if err != nil {
				t.Fatal(err)
			}
			check := func(what string, b []byte) {
				t.Helper()
				got, _, err := agentctx.EncodesAs(m, b, nil)
				if want := bytes.Equal(enc, b); got != want || err != nil {
					t.Errorf("%.60s (owned %v): EncodesAs(%s) = %v, %v; want %v", c, owned, what, got, err, want)
				}
			}
			check("its encoding", enc)
			check("its input", []byte(c))
			check("cut short", enc[:len(enc)-1])
			check("run on", append(bytes.Clone(enc), ' '))
			check("empty", nil)
			if big := rawjson.AppendString(nil, encodesAsBig); bytes.Contains(enc, big) {
				check("without its large string", bytes.Replace(enc, big, nil, 1))
				check("with its large string twice", bytes.Replace(enc, big, append(bytes.Clone(big), big...), 1))
			}
			for _, at := range []int{0, 1, len(enc) / 3, len(enc) / 2, len(enc) - 2, len(enc) - 1} {
				b := bytes.Clone(enc)
				b[at] ^= 0x20
				check(fmt.Sprintf("changed at %d", at), b)
			}
			if edited := m.WithContent(agentctx.Text("replaced")); c != `{"role":"user","content":"replaced"}` {
				if ok, _, _ := agentctx.EncodesAs(edited, enc, nil); ok {
					t.Errorf("%.60s: an edited message encodes as the original", c)
				}
			}
		}
	}
}

// TestEncodesAsAllocatesLittle holds EncodesAs to checking a message of a
// large tool result without writing its encoding (issue 24).
func TestEncodesAsAllocatesLittle(t *testing.T) {
	raw := []byte(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"` + strings.Repeat(`drwxr-xr-x  2 root root 4096 Nov 23 file.go ok\n`, 1<<15) + `"}]}`)
	m, err := agentctx.DecodeOwnedMessage(raw)
	if err != nil {
		t.Fatal(err)
	}
	var ok bool
	if n := memtest.AllocatedBy(func() { ok, _, err = agentctx.EncodesAs(m, raw, nil) }); n > 64<<10 {
		t.Errorf("checking a %d-byte message allocated %d bytes", len(raw), n)
	}
	if !ok || err != nil {
		t.Fatalf("the message does not encode as it came (%v)", err)
	}
}

// FuzzEncodesAs holds EncodesAs to AppendJSON for any message and bytes.
func FuzzEncodesAs(f *testing.F) {
	for _, c := range append(encodesAsCases(), ownedCases...) {
		f.Add([]byte(c), []byte(c))
	}
	f.Fuzz(func(t *testing.T, raw, other []byte) {
		m, err := agentctx.DecodeMessage(raw)
		if err != nil {
			return
		}
		enc, err := m.AppendJSON(nil)
		if err != nil {
			return
		}
		for _, b := range [][]byte{enc, raw, other} {
			if got, _, err := agentctx.EncodesAs(m, b, nil); got != bytes.Equal(enc, b) || err != nil {
				t.Fatalf("EncodesAs(%q) = %v, %v; the encoding is %q", b, got, err, enc)
			}
		}
	})
}

// An OwnedDecoder decodes as DecodeOwnedMessage does, and a message it
// decoded stays as it was while the decoder decodes others (it shares none
// of the decoder's working memory). The second input is decoded between.
func FuzzOwnedDecoder(f *testing.F) {
	for i, c := range ownedCases {
		f.Add([]byte(c), []byte(ownedCases[(i+1)%len(ownedCases)]))
	}
	f.Fuzz(func(t *testing.T, raw, other []byte) {
		want, err := agentctx.DecodeOwnedMessage(bytes.Clone(raw))
		var d agentctx.OwnedDecoder
		got, err2 := d.Decode(bytes.Clone(raw))
		if (err == nil) != (err2 == nil) {
			t.Fatalf("errors differ: %v / %v", err, err2)
		}
		for range 2 {
			d.Decode(bytes.Clone(other))
			d.Decode(bytes.Clone(raw))
		}
		if err != nil {
			return
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("the decoder's message differs from DecodeOwnedMessage's:\n%#v\n%#v", got, want)
		}
		a, e1 := want.AppendJSON(nil)
		b, e2 := got.AppendJSON(nil)
		if (e1 == nil) != (e2 == nil) || !bytes.Equal(a, b) {
			t.Fatalf("decoder's encodes %s (%v), not %s (%v)", b, e2, a, e1)
		}
	})
}

// Decoding small messages one after the other with an OwnedDecoder
// allocates what the messages keep and no member lists to be dropped (a
// request of 100,000 small messages made 48 MB of them).
func TestOwnedDecoderMakesNoGarbageLists(t *testing.T) {
	msgs := [][]byte{
		[]byte(`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_0000001","name":"Bash","input":{"command":"ls 1"}}]}`),
		[]byte(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_0000001","content":"ok 1"}]}`),
	}
	var d agentctx.OwnedDecoder
	for _, raw := range msgs { // the decoder's buffer grown once
		d.Decode(raw)
	}
	for _, raw := range msgs {
		with := memtest.AllocatedBy(func() { d.Decode(raw) })
		alone := memtest.AllocatedBy(func() { agentctx.DecodeOwnedMessage(raw) })
		if with+3*88 > alone {
			t.Errorf("%s: the decoder allocates %d bytes, DecodeOwnedMessage %d: the member lists are still made", raw, with, alone)
		}
	}
}
