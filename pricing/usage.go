package pricing

import "encoding/json"

// Usage is the token usage of one request, split by what each token is
// billed as: the module's one usage type, for what an upstream reported
// (read by the proxy and the SDK middleware), what the session engine is
// told (pipeline.Pipeline.Observe), what a simulated Cache bills, and what
// Prices.Cost prices. The five counts are disjoint: their sum is every
// token of the request.
//
// The providers count differently; their constructors say how:
// AnthropicUsage for the Messages API, whose input_tokens leave out the
// cache, OpenAIUsage for Chat Completions and Responses, whose input
// counts hold the cached tokens, and GoogleUsage for the Gemini API's
// usageMetadata, whose prompt count holds them too.
//
// Its JSON is the Messages API's usage object: input_tokens (uncached),
// cache_read_input_tokens, cache_creation_input_tokens (written with
// either lifetime) and output_tokens, with the 1-hour part of the writes
// as cache_creation_1h_input_tokens when there is one.
type Usage struct {
	// Uncached is the input tokens neither read from nor written to the
	// prompt cache.
	Uncached int `json:"input_tokens"`
	// CacheRead is the input tokens read from the prompt cache.
	CacheRead int `json:"cache_read_input_tokens"`
	// CacheWrite5m is the input tokens written to the prompt cache with
	// the default lifetime (Anthropic's 5 minutes). OpenAI has no write
	// price: its writes are Uncached.
	CacheWrite5m int `json:"-"`
	// CacheWrite1h is the input tokens written to the prompt cache with
	// the 1-hour lifetime (Anthropic's cache_control ttl "1h").
	CacheWrite1h int `json:"cache_creation_1h_input_tokens,omitempty"`
	// Output is the tokens generated, reasoning included (OpenAI's
	// completion_tokens hold its reasoning_tokens; Anthropic counts
	// thinking as output).
	Output int `json:"output_tokens"`
}

// AnthropicUsage returns the usage of a Messages API usage object from its
// counts: input_tokens (the uncached input: Anthropic counts the cache
// apart), cache_read_input_tokens, cache_creation_input_tokens (written
// with either lifetime), cache_creation.ephemeral_1h_input_tokens (the part
// of those with the 1-hour lifetime, at most all of them) and
// output_tokens.
func AnthropicUsage(input, cacheRead, cacheCreation, cacheCreation1h, output int) Usage {
	w1h := max(0, min(cacheCreation1h, cacheCreation))
	return Usage{Uncached: input, CacheRead: cacheRead, CacheWrite5m: cacheCreation - w1h, CacheWrite1h: w1h, Output: output}
}

// OpenAIUsage returns the usage of an OpenAI usage object from its counts:
// Chat Completions' prompt_tokens, prompt_tokens_details.cached_tokens and
// completion_tokens, or Responses' input_tokens,
// input_tokens_details.cached_tokens and output_tokens. The input count
// holds the cached tokens (at most all of it), which are cache reads;
// OpenAI bills no cache writes.
func OpenAIUsage(input, cached, output int) Usage {
	cached = max(0, min(cached, input))
	return Usage{Uncached: input - cached, CacheRead: cached, Output: output}
}

// GoogleUsage returns the usage of a Gemini API usageMetadata from its
// counts: promptTokenCount (which holds the cached tokens),
// cachedContentTokenCount (at most all of the prompt; cache reads: the
// implicit cache bills no writes), candidatesTokenCount and
// thoughtsTokenCount (the thinking, billed as output: the candidates'
// count leaves it out).
func GoogleUsage(prompt, cached, candidates, thoughts int) Usage {
	cached = max(0, min(cached, prompt))
	return Usage{Uncached: prompt - cached, CacheRead: cached, Output: max(0, candidates) + max(0, thoughts)}
}

// Input returns every input token of the request: uncached, read and
// written.
func (u Usage) Input() int { return u.Uncached + u.CacheRead + u.CacheWrite5m + u.CacheWrite1h }

// CacheWrite returns the input tokens written to the prompt cache, either
// lifetime.
func (u Usage) CacheWrite() int { return u.CacheWrite5m + u.CacheWrite1h }

// Add returns the sum of two usages.
func (u Usage) Add(v Usage) Usage {
	return Usage{Uncached: u.Uncached + v.Uncached, CacheRead: u.CacheRead + v.CacheRead, CacheWrite5m: u.CacheWrite5m + v.CacheWrite5m,
		CacheWrite1h: u.CacheWrite1h + v.CacheWrite1h, Output: u.Output + v.Output}
}

// MarshalJSON writes the usage as the Messages API's usage object (see
// Usage).
func (u Usage) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Uncached  int `json:"input_tokens"`
		CacheRead int `json:"cache_read_input_tokens"`
		// CacheWrite is the input tokens written to the prompt cache,
		// either lifetime (the 1-hour ones included).
		CacheWrite   int `json:"cache_creation_input_tokens"`
		CacheWrite1h int `json:"cache_creation_1h_input_tokens,omitempty"`
		Output       int `json:"output_tokens"`
	}{u.Uncached, u.CacheRead, u.CacheWrite(), u.CacheWrite1h, u.Output})
}

// UnmarshalJSON reads what MarshalJSON writes: cache writes without a
// 1-hour part are of the default lifetime.
func (u *Usage) UnmarshalJSON(data []byte) error {
	type plain Usage
	var v struct {
		plain
		CacheWrite int `json:"cache_creation_input_tokens"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*u = AnthropicUsage(v.Uncached, v.CacheRead, v.CacheWrite, v.CacheWrite1h, v.Output)
	return nil
}
