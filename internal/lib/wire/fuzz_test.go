package wire

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentctx/agentctx/pricing"
)

// feedSplit reads a stream fed in chunks cut at the given offsets (taken
// modulo its length), and returns its events and the usage read from them.
func feedSplit(api API, s []byte, cuts []byte) ([]string, UsageReader) {
	var out []string
	var r UsageReader
	var sse SSE
	emit := func(e Event) {
		out = append(out, fmt.Sprintf("%q|%q", e.Name, e.Data))
		r.Event(api, e.Data)
	}
	at := 0
	for _, c := range cuts {
		if len(s) == 0 {
			break
		}
		next := min(at+int(c)%(len(s)+1), len(s))
		sse.Feed(s[at:next], emit)
		at = next
	}
	sse.Feed(s[at:], emit)
	sse.End(emit)
	return out, r
}

// FuzzSSE: no input makes the reader or the usage parsers panic, and the
// events and usage of a stream do not depend on how it is cut into chunks.
func FuzzSSE(f *testing.F) {
	f.Add(uint8(1), []byte(stream(`{"type":"message_start","message":{"usage":{"input_tokens":10,"cache_read_input_tokens":5}}}`, `{"type":"message_delta","usage":{"output_tokens":9}}`)), []byte{3, 40, 7})
	f.Add(uint8(2), []byte("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":1,\"prompt_tokens_details\":{\"cached_tokens\":4}}}\r\n\r\ndata: [DONE]\r\n\r\n"), []byte{1, 1, 200})
	f.Add(uint8(3), []byte("event: response.completed\rdata: {\"type\":\"response.completed\",\"response\":{\"usage\":{\"input_tokens\":3}}}\r\r"), []byte{13})
	f.Add(uint8(1), []byte("\xef\xbb\xbf: c\ndata\ndata:\n\nevent\n\n"), []byte{0, 1, 2})
	f.Fuzz(func(t *testing.T, api uint8, s []byte, cuts []byte) {
		a := API(api % 5) // 0 is no API: nothing read
		whole, wu := feedSplit(a, s, nil)
		split, su := feedSplit(a, s, cuts)
		if strings.Join(whole, ";") != strings.Join(split, ";") {
			t.Fatalf("events differ with cuts %v:\nwhole %q\nsplit %q", cuts, whole, split)
		}
		if wu != su {
			t.Fatalf("usage differs with cuts %v: whole %+v, split %+v", cuts, wu, su)
		}
		if negative(wu.Usage) {
			t.Fatalf("negative usage %+v", wu.Usage)
		}
	})
}

// FuzzUsageWhole: no whole answer makes the parsers panic or report a
// negative count.
func FuzzUsageWhole(f *testing.F) {
	f.Add(uint8(1), []byte(`{"usage":{"input_tokens":52,"cache_read_input_tokens":3000,"cache_creation":{"ephemeral_1h_input_tokens":4},"output_tokens":7}}`))
	f.Add(uint8(2), []byte(`{"usage":{"prompt_tokens":900,"completion_tokens":4,"prompt_tokens_details":{"cached_tokens":768}}}`))
	f.Add(uint8(3), []byte(`{"usage":{"input_tokens":90,"input_tokens_details":{"cached_tokens":64},"output_tokens":3}}`))
	f.Fuzz(func(t *testing.T, api uint8, body []byte) {
		var r UsageReader
		r.Whole(API(api%5), body)
		r.Event(API(api%5), body)
		if u := r.Usage; negative(u) {
			t.Fatalf("negative usage %+v", u)
		}
	})
}

// negative reports whether a count of u, or their sum, is negative.
func negative(u pricing.Usage) bool {
	return u.Uncached < 0 || u.CacheRead < 0 || u.CacheWrite5m < 0 || u.CacheWrite1h < 0 || u.Output < 0 || u.Input() < 0
}
