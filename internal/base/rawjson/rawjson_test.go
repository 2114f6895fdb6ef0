package rawjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestValidAgreesWithEncodingJSON(t *testing.T) {
	inputs := []string{
		`{}`, `[]`, `""`, `0`, `-0`, `1.5e-3`, `true`, `null`, ` {"a" : [1, "x", {"b":null}] } `,
		`{`, `[1,]`, `{"a":1,}`, `01`, `1.`, `.5`, `-`, `1e`, `"\x"`, `"\u12"`, "\"\x01\"", `tru`, `nul`, `{"a"}`,
		`{"a":1 "b":2}`, `[1 2]`, `"abc`, `[] []`, `"\ud800"`, "\"\xff\"", `{"\u00e9":1}`, `[` + strings.Repeat(`[`, 50) + strings.Repeat(`]`, 51),
	}
	for _, in := range inputs {
		err := Valid([]byte(in))
		if (err == nil) != json.Valid([]byte(in)) {
			t.Errorf("Valid(%q) = %v, encoding/json says %v", in, err, json.Valid([]byte(in)))
		}
	}
}

func TestSyntaxErrorOffset(t *testing.T) {
	err := Valid([]byte(`{"a": [1, 2,, 3]}`))
	var se *SyntaxError
	if !errors.As(err, &se) || se.Offset != 12 {
		t.Fatalf("error = %v, want offset 12", err)
	}
}

func TestMembersKeepOrderAndBytes(t *testing.T) {
	ms, err := Members([]byte(` { "b" : 1.50 , "a":{"x": [ 1 ]}, "\u0063":"\u00e9" } `))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range ms {
		got = append(got, m.Key+"|"+string(m.RawKey)+"|"+string(m.Value))
	}
	want := `b|"b"|1.50 a|"a"|{"x": [ 1 ]} c|"\u0063"|"\u00e9"`
	if strings.Join(got, " ") != want {
		t.Errorf("members = %s\nwant %s", strings.Join(got, " "), want)
	}
	if _, err := Members([]byte(`[1]`)); !errors.Is(err, ErrNotObject) {
		t.Errorf("array: %v", err)
	}
	els, err := Elements([]byte(`[1, "a" ,{}]`))
	if err != nil || len(els) != 3 || string(els[1]) != `"a"` {
		t.Errorf("elements = %q, %v", els, err)
	}
}

func TestAppendString(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", `"plain"`},
		{`q"b\`, `"q\"b\\"`},
		{"\b\f\n\r\t", `"\b\f\n\r\t"`},
		{"\x00\x1f\x7f", `"\u0000\u001f` + "\x7f" + `"`},
		{"<a&b>", `"<a&b>"`},
		{"\u2028\u2029", "\"\u2028\u2029\""},
		{"é🚀", `"é🚀"`},
		{"bad\xffutf8", "\"bad\uFFFDutf8\""},
	}
	for _, tt := range tests {
		if got := string(AppendString(nil, tt.in)); got != tt.want {
			t.Errorf("AppendString(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestAppendCompactAndCanonical(t *testing.T) {
	in := "{ \"a\" : [ 1 , 2.50 ] ,\n \"s\" : \"x y\\n\\u00e9\\/\\u001f\" }"
	if got, want := string(AppendCompact(nil, []byte(in))), `{"a":[1,2.50],"s":"x y\n\u00e9\/\u001f"}`; got != want {
		t.Errorf("compact = %s, want %s", got, want)
	}
	if got, want := string(AppendCanonical(nil, []byte(in))), `{"a":[1,2.50],"s":"x y\né/\u001f"}`; got != want {
		t.Errorf("canonical = %s, want %s", got, want)
	}
	var c bytes.Buffer
	_ = json.Compact(&c, []byte(in))
	if c.String() != string(AppendCompact(nil, []byte(in))) {
		t.Error("AppendCompact disagrees with json.Compact")
	}
}

// FuzzCompactRuns holds CompactRuns and AppendCompact to json.Compact: the
// runs yielded, joined, and what AppendCompact appends are its output, and
// no run is empty.
func FuzzCompactRuns(f *testing.F) {
	for _, s := range []string{"{ \"a\" : [ 1 , 2.50 ] ,\n \"s\" : \"x y\\n\\\" \" }", "1", " [ ] ", `"a b"`, "{}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return
		}
		var got []byte
		CompactRuns(raw, func(run []byte) {
			if len(run) == 0 {
				t.Fatal("an empty run")
			}
			got = append(got, run...)
		})
		var want bytes.Buffer
		if err := json.Compact(&want, raw); err != nil {
			t.Fatal(err)
		}
		if string(got) != want.String() {
			t.Fatalf("runs %q, want %q", got, want.String())
		}
		if c := AppendCompact(nil, raw); string(c) != want.String() {
			t.Fatalf("AppendCompact %q, want %q", c, want.String())
		}
		if got, want := IsCanonical(raw), bytes.Equal(AppendCanonical(nil, raw), raw); got != want {
			t.Fatalf("IsCanonical(%q) = %v, want %v", raw, got, want)
		}
	})
}

// TestIsCanonical: a value is canonical when AppendCanonical appends it
// as it is.
func TestIsCanonical(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want bool
	}{
		{`{"a":[1,2.50],"s":"x y\n\" "}`, true},
		{`{"a": 1}`, false},
		{"[1,\n2]", false},
		{`"\u0041"`, false}, // written as A
		{`"\u0001"`, true},
		{`"\/"`, false},
		{`"é"`, true},
		{"\"\xff\"", false}, // invalid UTF-8 is replaced
		{`"abc`, false},
		{``, true},
		{`null`, true},
	} {
		if got := IsCanonical([]byte(tc.raw)); got != tc.want {
			t.Errorf("IsCanonical(%s) = %v, want %v", tc.raw, got, tc.want)
		}
		if tc.raw != `"abc` {
			if got := bytes.Equal(AppendCanonical(nil, []byte(tc.raw)), []byte(tc.raw)); got != tc.want {
				t.Errorf("AppendCanonical(%s) is itself: %v, want %v", tc.raw, got, tc.want)
			}
		}
	}
}

func TestUnquote(t *testing.T) {
	tests := []struct{ in, want string }{
		{`"abc"`, "abc"},
		{`"\u00e9\n"`, "é\n"},
		{`"\ud83d\ude80"`, "🚀"},
		{`"\ud800"`, "\uFFFD"},
		{"\"\xff\"", "\uFFFD"},
		{`x`, ""},
	}
	for _, tt := range tests {
		if got := Unquote([]byte(tt.in)); got != tt.want {
			t.Errorf("Unquote(%s) = %q, want %q", tt.in, got, tt.want)
		}
		if got := AppendUnquote([]byte("pre"), []byte(tt.in)); string(got) != "pre"+tt.want {
			t.Errorf("AppendUnquote(pre, %s) = %q, want %q", tt.in, got, "pre"+tt.want)
		}
	}
}

// FuzzScan: the scanner agrees with encoding/json on validity, never panics,
// and its compact and canonical forms are valid JSON with the same value.
func FuzzScan(f *testing.F) {
	for _, s := range []string{`{"a":[1,{"b":"\u00e9"}]}`, `[]`, `"x"`, `{"a":1,}`, "\"\xff\"", `[1e5,-0.5]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		err := Valid(data)
		if (err == nil) != json.Valid(data) {
			t.Fatalf("Valid = %v, encoding/json = %v", err, json.Valid(data))
		}
		Members(data)
		Elements(data)
		if err != nil {
			return
		}
		trimmed := bytes.TrimSpace(data)
		compact := AppendCompact(nil, trimmed)
		var want bytes.Buffer
		if err := json.Compact(&want, trimmed); err != nil || !bytes.Equal(compact, want.Bytes()) {
			t.Fatalf("compact %s, want %s", compact, want.Bytes())
		}
		canon := AppendCanonical(nil, trimmed)
		a, err := decodeNumbers(canon)
		if err != nil {
			t.Fatalf("canonical form invalid: %v: %s", err, canon)
		}
		b, _ := decodeNumbers(trimmed)
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if !bytes.Equal(ja, jb) {
			t.Fatalf("canonical form changed the value: %s vs %s", canon, trimmed)
		}
		if !bytes.Equal(AppendCanonical(nil, canon), canon) {
			t.Fatalf("canonical form not stable: %s", canon)
		}
	})
}

func decodeNumbers(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

// FuzzUnquote: Unquote decodes every valid string token exactly as
// encoding/json does.
func FuzzUnquote(f *testing.F) {
	for _, s := range []string{`"a\u00e9\n"`, `"\ud83d\ude80"`, `"\ud800x"`, `"\udc00\ud800"`, "\"\xff\xfe\"", `"\/\b"`, `"\ud800\u0041"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		end, err := ValueEnd(data, 0)
		if err != nil || end != len(data) || data[0] != '"' {
			return
		}
		var want string
		if err := json.Unmarshal(data, &want); err != nil {
			t.Fatalf("encoding/json rejects a string the scanner accepts: %v", err)
		}
		if got := Unquote(data); got != want {
			t.Fatalf("Unquote(%q) = %q, want %q", data, got, want)
		}
		if got := AppendUnquote([]byte("x"), data); string(got) != "x"+want {
			t.Fatalf("AppendUnquote(x, %q) = %q, want %q", data, got, "x"+want)
		}
	})
}

func TestMembersFunc(t *testing.T) {
	data := []byte(`{"a":[1,2],"b":{"c":"}"},"d":3}`)
	var asked []string
	ms, err := MembersFunc(data, func(key string, i int) (int, error) {
		asked = append(asked, key)
		if key == "b" {
			return i + len(`{"c":"}"}`), nil // known, not scanned
		}
		return -1, nil
	})
	if err != nil || len(ms) != 3 || string(ms[1].Value) != `{"c":"}"}` || string(ms[2].Value) != "3" {
		t.Fatalf("%v %q", err, ms)
	}
	if strings.Join(asked, ",") != "a,b,d" {
		t.Fatalf("asked %v", asked)
	}
	if _, err := MembersFunc(data, func(string, int) (int, error) { return len(data) + 1, nil }); err == nil {
		t.Fatal("a value ending past the input was accepted")
	}
	if _, err := MembersFunc(data, func(key string, i int) (int, error) { return i - 1, nil }); err == nil {
		t.Fatal("a value ending before it starts was accepted")
	}
	want := errors.New("stop")
	if _, err := MembersFunc(data, func(string, int) (int, error) { return 0, want }); !errors.Is(err, want) {
		t.Fatalf("err %v", err)
	}
}

// FuzzIsString holds IsString and StringPrefix to AppendString: a token
// is the string's encoding exactly when AppendString writes it, and
// begins with it exactly when it begins with what AppendString writes,
// for every string and every token (the string's own encoding, an
// unquoted token, or bytes).
func FuzzIsString(f *testing.F) {
	for _, s := range []string{"plain", `q"b\`, "\b\f\n\r\t", "\x00\x1f\x7f", "é🚀", "bad\xffutf8", "\u2028", ""} {
		f.Add(s, []byte(`"`+s+`"`))
	}
	f.Add("a\nb", []byte(`"a\u000ab"`))
	f.Add("\xff", []byte("\"\uFFFD\""))
	f.Add("a\x01", []byte(`"a\u0001" and more`))
	f.Fuzz(func(t *testing.T, s string, token []byte) {
		enc := AppendString(nil, s)
		if !IsString(enc, s) {
			t.Fatalf("IsString(%s, %q) = false for its own encoding", enc, s)
		}
		if got, want := IsString(token, s), string(token) == string(enc); got != want {
			t.Fatalf("IsString(%q, %q) = %v, want %v", token, s, got, want)
		}
		if n, ok := StringPrefix(token, s); ok != bytes.HasPrefix(token, enc) || ok && n != len(enc) {
			t.Fatalf("StringPrefix(%q, %q) = %d, %v; the encoding is %q", token, s, n, ok, enc)
		}
		if end, err := ValueEnd(token, 0); err == nil && end == len(token) && token[0] == '"' {
			u := Unquote(token)
			if got, want := IsString(token, u), string(token) == string(AppendString(nil, u)); got != want {
				t.Fatalf("IsString(%q, Unquote) = %v, want %v", token, got, want)
			}
		}
	})
}

func TestTextOfString(t *testing.T) {
	cases := []struct {
		in, want string
		ok       bool
	}{
		{`"a\nb"`, "a\nb", true},
		{`"Command executed.\nOutput:\nok\n"`, "Command executed.\nOutput:\nok\n", true},
		{`"é \"q\" \\ \u0001"`, "é \"q\" \\ \x01", true},
		{`""`, "", true},
		{`"a\/b"`, "", false},   // not as JSON.stringify writes it: "a/b" would not give it back
		{`"\u00e9"`, "", false}, // idem
		{` "a"`, "", false},     // white space around
		{`"a" "b"`, "", false},  // two tokens
		{`"a`, "", false},       // cut
		{"\"a\nb\"", "", false}, // raw control character
		{`{"a":1}`, "", false},  // not a string
		{`plain text`, "", false},
	}
	for _, c := range cases {
		got, ok := TextOfString(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("TextOfString(%q) = %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}
