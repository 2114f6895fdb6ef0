package pricing_test

import (
	"encoding/json"
	"testing"

	"github.com/agentctx/agentctx/pricing"
)

// Each provider's usage object, as its counts, gives the usage whose five
// counts are disjoint (worked by hand).
func TestUsageConstructors(t *testing.T) {
	for _, tc := range []struct {
		name        string
		got         pricing.Usage
		want        pricing.Usage
		input, cwrt int
	}{
		// Messages API: input_tokens 100, cache_read_input_tokens 3000,
		// cache_creation_input_tokens 40 (no 1-hour part), output 7.
		{"anthropic", pricing.AnthropicUsage(100, 3000, 40, 0, 7),
			pricing.Usage{Uncached: 100, CacheRead: 3000, CacheWrite5m: 40, Output: 7}, 3140, 40},
		// 500 written, 300 of them for an hour: 200 + 300.
		{"anthropic 1h", pricing.AnthropicUsage(1, 0, 500, 300, 2),
			pricing.Usage{Uncached: 1, CacheWrite5m: 200, CacheWrite1h: 300, Output: 2}, 501, 500},
		// Every write for an hour.
		{"anthropic all 1h", pricing.AnthropicUsage(0, 10, 64, 64, 1),
			pricing.Usage{CacheRead: 10, CacheWrite1h: 64, Output: 1}, 74, 64},
		// A 1-hour part larger than the writes is all of them.
		{"anthropic 1h over", pricing.AnthropicUsage(5, 0, 20, 90, 0),
			pricing.Usage{Uncached: 5, CacheWrite1h: 20}, 25, 20},
		{"anthropic 1h negative", pricing.AnthropicUsage(5, 0, 20, -3, 0),
			pricing.Usage{Uncached: 5, CacheWrite5m: 20}, 25, 20},
		// Chat Completions: prompt_tokens 900 holding cached_tokens 768,
		// completion_tokens 4.
		{"chat", pricing.OpenAIUsage(900, 768, 4),
			pricing.Usage{Uncached: 132, CacheRead: 768, Output: 4}, 900, 0},
		// Responses: input_tokens 90 holding cached_tokens 64, output 3.
		{"responses", pricing.OpenAIUsage(90, 64, 3),
			pricing.Usage{Uncached: 26, CacheRead: 64, Output: 3}, 90, 0},
		{"responses uncached", pricing.OpenAIUsage(12, 0, 30),
			pricing.Usage{Uncached: 12, Output: 30}, 12, 0},
		// More cached than input: all of it cached.
		{"openai cached over", pricing.OpenAIUsage(10, 25, 1),
			pricing.Usage{CacheRead: 10, Output: 1}, 10, 0},
		{"openai cached negative", pricing.OpenAIUsage(10, -1, 1),
			pricing.Usage{Uncached: 10, Output: 1}, 10, 0},
		// Gemini: promptTokenCount 5000 holding cachedContentTokenCount
		// 4096, candidatesTokenCount 40, thoughtsTokenCount 300.
		{"gemini", pricing.GoogleUsage(5000, 4096, 40, 300),
			pricing.Usage{Uncached: 904, CacheRead: 4096, Output: 340}, 5000, 0},
		{"gemini uncached, no thoughts", pricing.GoogleUsage(12, 0, 7, 0),
			pricing.Usage{Uncached: 12, Output: 7}, 12, 0},
		// Thinking only (an answer of function calls may have no
		// candidates' tokens).
		{"gemini thoughts only", pricing.GoogleUsage(100, 0, 0, 64),
			pricing.Usage{Uncached: 100, Output: 64}, 100, 0},
		{"gemini cached over", pricing.GoogleUsage(10, 25, 1, 0),
			pricing.Usage{CacheRead: 10, Output: 1}, 10, 0},
		{"gemini negatives", pricing.GoogleUsage(10, -1, -2, -3),
			pricing.Usage{Uncached: 10}, 10, 0},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, tc.got, tc.want)
		}
		if tc.got.Input() != tc.input || tc.got.CacheWrite() != tc.cwrt {
			t.Errorf("%s: Input %d, CacheWrite %d; want %d, %d", tc.name, tc.got.Input(), tc.got.CacheWrite(), tc.input, tc.cwrt)
		}
	}
}

// The JSON is the Messages API's usage object, keys in the order the
// proxy's stats printed them before there was one usage type; the 1-hour
// part only when there is one. It reads back whole, and reads the usage
// earlier versions printed (pipeline.Usage's, with "counted").
func TestUsageJSON(t *testing.T) {
	for _, tc := range []struct {
		u    pricing.Usage
		json string
	}{
		{pricing.Usage{Uncached: 100, CacheRead: 3000, CacheWrite5m: 40, Output: 7},
			`{"input_tokens":100,"cache_read_input_tokens":3000,"cache_creation_input_tokens":40,"output_tokens":7}`},
		{pricing.Usage{Uncached: 1, CacheWrite5m: 200, CacheWrite1h: 300, Output: 2},
			`{"input_tokens":1,"cache_read_input_tokens":0,"cache_creation_input_tokens":500,"cache_creation_1h_input_tokens":300,"output_tokens":2}`},
		{pricing.Usage{}, `{"input_tokens":0,"cache_read_input_tokens":0,"cache_creation_input_tokens":0,"output_tokens":0}`},
	} {
		b, err := json.Marshal(tc.u)
		if err != nil || string(b) != tc.json {
			t.Errorf("Marshal(%+v) = %s, %v; want %s", tc.u, b, err, tc.json)
		}
		var back pricing.Usage
		if err := json.Unmarshal(b, &back); err != nil || back != tc.u {
			t.Errorf("Unmarshal(%s) = %+v, %v; want %+v", b, back, err, tc.u)
		}
	}
	var old pricing.Usage
	err := json.Unmarshal([]byte(`{"input_tokens":100,"cache_read_input_tokens":3000,"cache_creation_input_tokens":40,"output_tokens":7,"counted":12}`), &old)
	if want := (pricing.Usage{Uncached: 100, CacheRead: 3000, CacheWrite5m: 40, Output: 7}); err != nil || old != want {
		t.Errorf("earlier encoding read as %+v, %v; want %+v", old, err, want)
	}
	if err := json.Unmarshal([]byte(`{"input_tokens":"x"}`), &old); err == nil {
		t.Error("a count that is a string was read")
	}
}
