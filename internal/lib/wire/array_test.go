package wire

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/agentctx/agentctx/internal/base/rawjson"
	"github.com/agentctx/agentctx/pricing"
)

// feedArray returns the elements a JSONArray emits for s fed in chunks
// cut at the given offsets (taken modulo its length), and whether the
// last one came before the stream's end (End).
func feedArray(s []byte, cuts []byte) (elems []string, beforeEnd int) {
	var a JSONArray
	emit := func(el []byte) { elems = append(elems, string(el)) }
	at := 0
	for _, c := range cuts {
		if len(s) == 0 {
			break
		}
		next := min(at+int(c)%(len(s)+1), len(s))
		a.Feed(s[at:next], emit)
		at = next
	}
	a.Feed(s[at:], emit)
	beforeEnd = len(elems)
	a.End(emit)
	return elems, beforeEnd
}

// Gemini's array stream as the fake writes it (and the API: "[", the
// objects separated by ",\r\n", "]"); scalars, strings with brackets
// and escapes, nesting; and what is not an array.
func TestJSONArray(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string
		early    int // elements emitted before End
	}{
		{"gemini stream", "[{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a]}\\\"\"}]}}]}\n,\r\n{\"b\":[1,{\"c\":\"}\"}]}\n]",
			[]string{`{"candidates":[{"content":{"parts":[{"text":"a]}\""}]}}]}`, `{"b":[1,{"c":"}"}]}`}, 2},
		{"empty", "[]", nil, 0},
		{"spaces", " \r\n[ ]\n", nil, 0},
		{"scalars", `[1, true,null ,"x,]",-2.5e3]`, []string{"1", "true", "null", `"x,]"`, "-2.5e3"}, 5},
		{"nested arrays", `[[1,[2]],[]]`, []string{`[1,[2]]`, `[]`}, 2},
		{"after the end", `[{"a":1}] [{"b":2}]`, []string{`{"a":1}`}, 1},
		{"byte order mark", "\xef\xbb\xbf[{}]", []string{`{}`}, 1},
		{"cut in an element", `[{"a":1},{"b":`, []string{`{"a":1}`, `{"b":`}, 1},
		{"cut after a scalar", `[1,22`, []string{"1", "22"}, 1},
		{"an object, whole", " {\"error\":{\"code\":400}}\n", []string{`{"error":{"code":400}}`}, 0},
		{"not JSON", "data: x", []string{"data: x"}, 0},
	} {
		for _, cuts := range [][]byte{nil, {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, {5, 17}} {
			got, early := feedArray([]byte(tc.in), cuts)
			if !reflect.DeepEqual(got, tc.want) || early != tc.early {
				t.Errorf("%s (cuts %v): %q, %d before End; want %q, %d", tc.name, cuts, got, early, tc.want, tc.early)
			}
		}
	}
}

// An element over MaxEventSize is passed over; the next is read.
func TestJSONArrayTooLarge(t *testing.T) {
	big := `{"t":"` + strings.Repeat("x", MaxEventSize) + `"}`
	got, _ := feedArray([]byte("["+big+`,{"u":1}]`), []byte{200, 200})
	if !reflect.DeepEqual(got, []string{`{"u":1}`}) {
		t.Errorf("got %d elements: %.40q", len(got), got)
	}
}

// FuzzJSONArray: no input makes the reader panic; its elements do not
// depend on how the stream is cut into chunks; a valid array's elements
// are rawjson.Elements'.
func FuzzJSONArray(f *testing.F) {
	f.Add([]byte("[{\"a\":\"]\\\"\"}\n,\r\n{\"b\":[1]}]"), []byte{3, 7})
	f.Add([]byte(`[1,"x",[true],null]`), []byte{1, 1, 1})
	f.Add([]byte("\xef\xbb\xbf {\"x\":1}"), []byte{2})
	f.Fuzz(func(t *testing.T, s []byte, cuts []byte) {
		whole, _ := feedArray(s, nil)
		split, _ := feedArray(s, cuts)
		if !reflect.DeepEqual(whole, split) {
			t.Fatalf("elements differ with cuts %v:\nwhole %q\nsplit %q", cuts, whole, split)
		}
		if bytes.HasPrefix(s, bom) || rawjson.Kind(s) != '[' || rawjson.Valid(s) != nil {
			return
		}
		els, err := rawjson.Elements(s)
		if err != nil {
			t.Fatal(err)
		}
		want := []string(nil)
		for _, el := range els {
			want = append(want, string(el))
		}
		if !reflect.DeepEqual(whole, want) {
			t.Fatalf("elements %q, want %q", whole, want)
		}
	})
}

// The fake upstream's Gemini answers, as the API writes them: every chunk
// carries the prompt's count, the last (with its finishReason) the whole
// usage; the cached tokens are inside promptTokenCount and the thoughts
// are billed as output. Read as SSE events, as the array's elements, and
// as a whole answer (object or array).
func TestGeminiUsage(t *testing.T) {
	chunks := []string{
		`{"candidates":[{"content":{"parts":[{"text":"I will","thought":true}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":5000,"totalTokenCount":5000},"modelVersion":"gemini-2.5-flash","responseId":"r1"}`,
		`{"candidates":[{"content":{"parts":[{"text":"usageMetadata\" finishReason\""}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":5000,"totalTokenCount":5000}}`,
		`{"candidates":[{"content":{"parts":[{"functionCall":{"id":"c1","name":"run_shell_command","args":{"command":"ls"}},"thoughtSignature":"c2ln"}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":5000,"candidatesTokenCount":40,"totalTokenCount":5340,"cachedContentTokenCount":4096,"thoughtsTokenCount":300,"promptTokensDetails":[{"modality":"TEXT","tokenCount":5000}]},"modelVersion":"gemini-2.5-flash"}`,
	}
	want := pricing.Usage{Uncached: 904, CacheRead: 4096, Output: 340}
	check := func(name string, r UsageReader) {
		t.Helper()
		if !r.Got || !r.Final || r.Usage != want {
			t.Errorf("%s: %+v got %v final %v; want %+v", name, r.Usage, r.Got, r.Final, want)
		}
	}
	check("sse", readStream(Gemini, "data: "+strings.Join(chunks, "\r\n\r\ndata: ")+"\r\n\r\n"))
	var r UsageReader
	var a JSONArray
	final := -1
	emit := func(el []byte) {
		r.Event(Gemini, el)
		if r.Final && final < 0 {
			final = int(r.Usage.Output)
		}
	}
	a.Feed([]byte("["+strings.Join(chunks, ",\r\n")+"]"), emit)
	a.End(emit)
	check("array stream", r)
	if final != 340 {
		t.Errorf("Final before the last chunk's usage: output %d", final)
	}
	// The first chunks alone: the prompt's count, not final.
	var early UsageReader
	early.Event(Gemini, []byte(chunks[0]))
	early.Event(Gemini, []byte(chunks[1]))
	if !early.Got || early.Final || early.Usage != (pricing.Usage{Uncached: 5000}) {
		t.Errorf("first chunks: %+v got %v final %v", early.Usage, early.Got, early.Final)
	}
	var whole UsageReader
	whole.Whole(Gemini, []byte(chunks[2]))
	check("whole", whole)
	var arr UsageReader
	arr.Whole(Gemini, []byte("["+strings.Join(chunks, ",\n")+"]"))
	check("whole array", arr)
	// toolUsePromptTokenCount is input.
	var tool UsageReader
	tool.Whole(Gemini, []byte(`{"usageMetadata":{"promptTokenCount":10,"toolUsePromptTokenCount":5,"candidatesTokenCount":2}}`))
	if tool.Usage != (pricing.Usage{Uncached: 15, Output: 2}) {
		t.Errorf("tool use prompt: %+v", tool.Usage)
	}
	// Another API's usage, and none, are not Gemini's.
	var other UsageReader
	other.Event(Gemini, []byte(`{"usage":{"input_tokens":3}}`))
	other.Event(Gemini, []byte(`{"usageMetadata":{"candidatesTokenCount":3},"candidates":[{"finishReason":""}]}`))
	other.Event(Gemini, []byte(`{"usageMetadata":{"promptTokenCount":3}`))
	if other.Got || other.Final {
		t.Errorf("read %+v (final %v) from no Gemini usage", other.Usage, other.Final)
	}
}
