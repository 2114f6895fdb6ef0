package proxy

import (
	"bytes"
	"io"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/base/rawjson"
	"github.com/agentctx/agentctx/internal/lib/ctxedit"
)

// TestSplicedPartsAreTheArray: the parts of an edited list are the bytes
// of the array written element by element (the original bytes of a
// matched message, the encoding of another, commas between), whatever
// the edit; messages adjacent in the body are one part.
func TestSplicedPartsAreTheArray(t *testing.T) {
	for _, raw := range []string{
		`{"model":"m","messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":"c"},{"role":"assistant","content":"d"}]}`,
		"{\"model\":\"m\",\"messages\":[ {\"role\":\"user\",\"content\":\"a\"} , {\"role\":\"assistant\",\"content\":\"b\"},{\"role\":\"user\",\"content\":\"c\"},\n{\"role\":\"assistant\",\"content\":\"d\"} ]}",
	} {
		body := []byte(raw)
		ms, err := rawjson.Members(body)
		if err != nil {
			t.Fatal(err)
		}
		items, err := rawjson.Elements(ms[1].Value)
		if err != nil {
			t.Fatal(err)
		}
		compact := !bytes.ContainsAny(body, " \n")
		for _, tc := range []struct {
			name  string
			match []int
			parts int // in the compact body
		}{
			{"all kept", []int{0, 1, 2, 3}, 3},
			{"first new", []int{-1, 1, 2, 3}, 5},
			{"middle new", []int{0, -1, 2, 3}, 7},
			{"last new", []int{0, 1, 2, -1}, 5},
			{"one inserted", []int{0, 1, -1, 2, 3}, 7},
			{"one dropped", []int{0, 2, 3}, 5},
			{"reordered", []int{1, 0, 3, 2}, 9},
			{"repeated", []int{0, 0, 1}, 5},
			{"new only", []int{-1, -1}, 5},
			{"none", nil, 2},
		} {
			a := &alignment{match: tc.match, out: make([]agentctx.Message, len(tc.match)), outEnc: make([][]byte, len(tc.match))}
			want := []byte{'['}
			for j, k := range tc.match {
				if j > 0 {
					want = append(want, ',')
				}
				if k >= 0 {
					want = append(want, items[k]...)
				} else {
					a.outEnc[j] = []byte(`{"role":"user","content":"new"}`)
					want = append(want, a.outEnc[j]...)
				}
			}
			want = append(want, ']')
			parts := splicedParts(body, items, a)
			if got := bytes.Join(parts, nil); !bytes.Equal(got, want) {
				t.Errorf("%s: parts make %s, want %s", tc.name, got, want)
			}
			if compact && len(parts) != tc.parts {
				t.Errorf("%s: %d parts, want %d", tc.name, len(parts), tc.parts)
			}
		}
	}
}

// TestReplaceParts: a body of parts reads, joins and hashes as the
// same edit made in a copy of the bytes, a member appended as
// ctxedit.AppendMember appends it.
func TestReplaceParts(t *testing.T) {
	for _, raw := range []string{`{"a":[1,2],"b":"x"}`, `{"a":[1,2],"b":"x"} `, "{\"a\":[1,2] ,\n\"b\":\"x\"}"} {
		body := []byte(raw)
		ms, err := rawjson.Members(body)
		if err != nil {
			t.Fatal(err)
		}
		a, b := ms[0].Value, ms[1].Value
		// splice replaces v in data, a copy of body edited after v only
		splice := func(v, repl []byte, data []byte) []byte {
			off := offsetIn(body, v)
			return append(append(append([]byte(nil), data[:off]...), repl...), data[off+len(v):]...)
		}
		for name, tc := range map[string]struct {
			spans []span
			want  []byte
		}{
			"none":       {nil, body},
			"one":        {[]span{{value: a, parts: [][]byte{[]byte("[3"), []byte(",4]")}}}, splice(a, []byte("[3,4]"), body)},
			"two":        {[]span{{value: b, repl: []byte(`"y"`)}, {value: a, repl: []byte(`[]`)}}, splice(a, []byte("[]"), splice(b, []byte(`"y"`), body))},
			"to nothing": {[]span{{value: a, parts: [][]byte{}}}, splice(a, nil, body)},
		} {
			got := replaceParts(body, tc.spans...)
			if !bytes.Equal(got.Bytes(), tc.want) || got.Len() != len(tc.want) {
				t.Errorf("%q %s: %q (%d), want %q", raw, name, got.Bytes(), got.Len(), tc.want)
			}
			for range 2 { // each reader reads it all
				if r, _ := io.ReadAll(got.reader()); !bytes.Equal(r, tc.want) {
					t.Errorf("%q %s: read %q, want %q", raw, name, r, tc.want)
				}
			}
			if h, w := hashPrefix(got.parts, got.Len()-1), hash64(tc.want[:len(tc.want)-1]); h != w {
				t.Errorf("%q %s: hash of the parts differs", raw, name)
			}
			m := appendMember(got, "context_management", []byte(`{"edits":[]}`))
			if want := ctxedit.AppendMember(tc.want, "context_management", []byte(`{"edits":[]}`)); !bytes.Equal(m.Bytes(), want) || m.Len() != len(want) {
				t.Errorf("%q %s: member appended: %q, want %q", raw, name, m.Bytes(), want)
			}
		}
	}
	for _, raw := range []string{`{}`, `{ }`, "{\n}\n"} {
		got := appendMember(wholeBody([]byte(raw)), "k", []byte(`1`))
		if want := ctxedit.AppendMember([]byte(raw), "k", []byte(`1`)); !bytes.Equal(got.Bytes(), want) {
			t.Errorf("%q: member appended: %q, want %q", raw, got.Bytes(), want)
		}
	}
	if b := (sendBody{}); b.read || b.Bytes() != nil || b.Len() != 0 {
		t.Error("the zero sendBody is a body read")
	}
	if b := wholeBody([]byte{}); !b.read || b.Bytes() == nil || b.Len() != 0 {
		t.Error("an empty body read is not one")
	}
}
