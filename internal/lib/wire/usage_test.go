package wire

import (
	"strings"
	"testing"

	"github.com/agentctx/agentctx/pricing"
)

// stream returns an SSE stream of the events' data.
func stream(events ...string) string {
	var b strings.Builder
	for _, e := range events {
		b.WriteString("data: " + e + "\n\n")
	}
	return b.String()
}

// readStream reads a stream's usage, fed in one chunk.
func readStream(api API, s string) UsageReader {
	var r UsageReader
	var sse SSE
	emit := func(e Event) { r.Event(api, e.Data) }
	sse.Feed([]byte(s), emit)
	sse.End(emit)
	return r
}

func TestUsageStreams(t *testing.T) {
	for _, tc := range []struct {
		name       string
		api        API
		events     []string
		want       pricing.Usage
		got, final bool
	}{
		{
			name: "anthropic start and delta",
			api:  Anthropic,
			events: []string{
				`{"type":"message_start","message":{"id":"m","usage":{"input_tokens":100,"cache_read_input_tokens":3000,"cache_creation_input_tokens":40,"output_tokens":1}}}`,
				`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi \"usage\""}}`,
				`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":7}}`,
				`{"type":"message_stop"}`,
			},
			want: pricing.Usage{Uncached: 100, CacheRead: 3000, CacheWrite5m: 40, Output: 7},
			got:  true, final: true,
		},
		{
			// Newer models repeat the input counts in message_delta: they
			// replace the start's.
			name: "anthropic delta with running totals",
			api:  Anthropic,
			events: []string{
				`{"type":"message_start","message":{"usage":{"input_tokens":10,"cache_read_input_tokens":5,"output_tokens":1}}}`,
				`{"type":"message_delta","usage":{"input_tokens":12,"cache_creation_input_tokens":3,"output_tokens":9}}`,
			},
			want: pricing.Usage{Uncached: 12, CacheRead: 5, CacheWrite5m: 3, Output: 9},
			got:  true, final: true,
		},
		{
			name: "anthropic 1-hour cache writes",
			api:  Anthropic,
			events: []string{
				`{"type":"message_start","message":{"usage":{"input_tokens":1,"cache_creation_input_tokens":500,"cache_creation":{"ephemeral_5m_input_tokens":200,"ephemeral_1h_input_tokens":300}}}}`,
				`{"type":"message_delta","usage":{"cache_creation_input_tokens":500,"output_tokens":2}}`,
			},
			want: pricing.Usage{Uncached: 1, CacheWrite5m: 200, CacheWrite1h: 300, Output: 2},
			got:  true, final: true,
		},
		{
			name:   "anthropic start only: not final",
			api:    Anthropic,
			events: []string{`{"type":"message_start","message":{"usage":{"input_tokens":10}}}`},
			want:   pricing.Usage{Uncached: 10},
			got:    true,
		},
		{
			name:   "anthropic usage null, negative, fraction, string",
			api:    Anthropic,
			events: []string{`{"type":"message_start","message":{"usage":null}}`, `{"type":"message_delta","usage":{"input_tokens":-4,"output_tokens":"7","cache_read_input_tokens":2.5}}`},
			want:   pricing.Usage{CacheRead: 2},
			got:    true, final: true,
		},
		{
			name:   "anthropic not JSON",
			api:    Anthropic,
			events: []string{`{"type":"message_delta","usage":{"output_tokens":7}`, `[DONE] "usage"`},
		},
		{
			name: "chat final usage chunk with cached tokens",
			api:  Chat,
			events: []string{
				`{"id":"c","choices":[{"delta":{"content":"x"}}],"usage":null}`,
				`{"id":"c","choices":[],"usage":{"prompt_tokens":900,"completion_tokens":4,"total_tokens":904,"prompt_tokens_details":{"cached_tokens":768}}}`,
				`[DONE]`,
			},
			want: pricing.Usage{Uncached: 132, CacheRead: 768, Output: 4},
			got:  true, final: true,
		},
		{
			name:   "chat without cached tokens",
			api:    Chat,
			events: []string{`{"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3}}`},
			want:   pricing.Usage{Uncached: 12, Output: 3},
			got:    true, final: true,
		},
		{
			name:   "chat usage without prompt_tokens",
			api:    Chat,
			events: []string{`{"choices":[],"usage":{"completion_tokens":3}}`},
			final:  true,
		},
		{
			name: "responses completed",
			api:  Responses,
			events: []string{
				`{"type":"response.created","response":{"id":"r","usage":null}}`,
				`{"type":"response.output_text.delta","delta":"usage"}`,
				`{"type":"response.completed","response":{"id":"r","usage":{"input_tokens":90,"input_tokens_details":{"cached_tokens":64},"output_tokens":3,"total_tokens":93}}}`,
			},
			want: pricing.Usage{Uncached: 26, CacheRead: 64, Output: 3},
			got:  true, final: true,
		},
		{
			name:   "responses incomplete",
			api:    Responses,
			events: []string{`{"type":"response.incomplete","response":{"usage":{"input_tokens":5,"output_tokens":1}}}`},
			want:   pricing.Usage{Uncached: 5, Output: 1},
			got:    true, final: true,
		},
		{
			name:   "responses usage in another event is not the final one",
			api:    Responses,
			events: []string{`{"type":"response.in_progress","response":{"usage":{"input_tokens":5,"output_tokens":1}}}`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := readStream(tc.api, stream(tc.events...))
			if r.Usage != tc.want || r.Got != tc.got || r.Final != tc.final {
				t.Errorf("got %+v got=%v final=%v, want %+v got=%v final=%v", r.Usage, r.Got, r.Final, tc.want, tc.got, tc.final)
			}
		})
	}
}

func TestUsageWhole(t *testing.T) {
	for _, tc := range []struct {
		name  string
		api   API
		body  string
		want  pricing.Usage
		got   bool
		final bool
	}{
		{"anthropic", Anthropic, `{"id":"m","type":"message","content":[{"type":"text","text":"hi"}],"usage":{"input_tokens":52,"cache_read_input_tokens":3000,"cache_creation_input_tokens":40,"cache_creation":{"ephemeral_1h_input_tokens":0},"output_tokens":7}}`,
			pricing.Usage{Uncached: 52, CacheRead: 3000, CacheWrite5m: 40, Output: 7}, true, true},
		{"chat", Chat, `{"choices":[{"message":{"content":"x"}}],"usage":{"prompt_tokens":900,"completion_tokens":4,"prompt_tokens_details":{"cached_tokens":768}}}`,
			pricing.Usage{Uncached: 132, CacheRead: 768, Output: 4}, true, true},
		{"responses", Responses, `{"id":"r","output":[],"usage":{"input_tokens":90,"input_tokens_details":{"cached_tokens":64},"output_tokens":3}}`,
			pricing.Usage{Uncached: 26, CacheRead: 64, Output: 3}, true, true},
		{"no usage", Anthropic, `{"type":"message"}`, pricing.Usage{}, false, true},
		{"array", Chat, `[1,2]`, pricing.Usage{}, false, false},
		{"invalid", Responses, `{"usage":{"input_tokens":1}`, pricing.Usage{}, false, false},
		{"empty", Anthropic, ``, pricing.Usage{}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r UsageReader
			r.Whole(tc.api, []byte(tc.body))
			if r.Usage != tc.want || r.Got != tc.got || r.Final != tc.final {
				t.Errorf("got %+v got=%v final=%v, want %+v got=%v final=%v", r.Usage, r.Got, r.Final, tc.want, tc.got, tc.final)
			}
		})
	}
}

// A usage object as a transcript records it is read as a Messages API
// answer's.
func TestAnthropicUsage(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want pricing.Usage
		ok   bool
	}{
		{`{"input_tokens":3,"cache_read_input_tokens":40000,"cache_creation_input_tokens":1200,"cache_creation":{"ephemeral_5m_input_tokens":200,"ephemeral_1h_input_tokens":1000},"output_tokens":80,"service_tier":"standard"}`,
			pricing.Usage{Uncached: 3, CacheRead: 40000, CacheWrite5m: 200, CacheWrite1h: 1000, Output: 80}, true},
		{`{"input_tokens":10,"output_tokens":2}`, pricing.Usage{Uncached: 10, Output: 2}, true},
		{`{"service_tier":"standard"}`, pricing.Usage{}, false},
		{`null`, pricing.Usage{}, false},
	} {
		if u, ok := AnthropicUsage([]byte(tc.raw)); u != tc.want || ok != tc.ok {
			t.Errorf("AnthropicUsage(%s) = %+v, %v; want %+v, %v", tc.raw, u, ok, tc.want, tc.ok)
		}
	}
}
