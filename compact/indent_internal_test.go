package compact

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// indentCases are compact JSON values whose indentation is easy to get
// wrong: empty containers, nesting, escapes (a backslash before the
// closing quote, an escaped quote, \u sequences), punctuation inside
// strings, numbers and literals.
var indentCases = []string{
	`{}`, `[]`, `""`, `0`, `true`, `null`,
	`{"a":{}}`, `{"a":[]}`, `[{}]`, `[[]]`, `[{},[],{"b":[{}]}]`,
	`{"role":"user","content":[{"type":"text","text":"a \"b\" c\\"}]}`,
	`{"k":"{[,:]}","v":"\\\\","w":"\u2028<&>\u00e9"}`,
	`{"a":1,"b":-2.5e10,"c":[1,2,3],"d":{"e":{"f":[true,false,null]}}}`,
	`{"x":"\\"}`, `["\\\\\"",{"\"":"\\"}]`,
}

// TestAppendIndentedIsIndent holds appendIndented to json.Indent, byte for
// byte, and indentedSize to its length, on the cases above and on 2,000
// random values: an archive must read the same whichever wrote it.
func TestAppendIndentedIsIndent(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	cases := append([]string(nil), indentCases...)
	for range 2000 {
		v := randomJSON(r, 0)
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, string(b))
	}
	for _, c := range cases {
		checkIndented(t, []byte(c))
	}
}

func checkIndented(t *testing.T, src []byte) {
	t.Helper()
	var want bytes.Buffer
	if err := json.Indent(&want, src, "  ", "  "); err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	got := appendIndented([]byte("x"), src, "  ", "  ")
	if string(got[1:]) != want.String() {
		t.Fatalf("%s:\ngot  %q\nwant %q", src, got[1:], want.String())
	}
	if n := indentedSize(src, 2, 2); n != want.Len() {
		t.Fatalf("%s: indentedSize %d, json.Indent wrote %d", src, n, want.Len())
	}
}

// randomJSON returns a random value of objects, arrays, strings with
// escapes and punctuation, numbers and literals.
func randomJSON(r *rand.Rand, depth int) any {
	k := r.IntN(7)
	if depth > 4 {
		k = r.IntN(3)
	}
	switch k {
	case 0:
		const alphabet = `ab "\{}[],:` + "\u2028\n\t\x01é<&>"
		var sb strings.Builder
		for range r.IntN(12) {
			rs := []rune(alphabet)
			sb.WriteRune(rs[r.IntN(len(rs))])
		}
		return sb.String()
	case 1:
		return r.Float64()*2e6 - 1e6
	case 2:
		return [...]any{true, false, nil}[r.IntN(3)]
	case 3, 4:
		a := make([]any, r.IntN(4))
		for i := range a {
			a[i] = randomJSON(r, depth+1)
		}
		return a
	default:
		m := map[string]any{}
		for i := range r.IntN(4) {
			m[fmt.Sprint("k", i, randomJSON(r, 5))] = randomJSON(r, depth+1)
		}
		return m
	}
}

// FuzzAppendIndented compares appendIndented with json.Indent on the
// compact form of any valid JSON.
func FuzzAppendIndented(f *testing.F) {
	for _, c := range indentCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if !json.Valid(in) {
			return
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, in); err != nil {
			return
		}
		checkIndented(t, compact.Bytes())
	})
}
