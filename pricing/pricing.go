// Package pricing prices model requests: a table of list prices per
// provider and model (USD per million tokens, as the providers publish
// them), the cost of a request's usage, and the parameters of each
// provider's prompt cache that decide what an edit of a conversation
// costs (the cache lifetime, the minimum cacheable prefix), and a Cache
// that simulates a provider's prompt cache, to bill a sequence of requests
// as the provider would.
//
// The prices are the providers' published list prices when this table was
// written (see Default); they change, so every user of the package takes a
// Table that callers may override, entry by entry, with Table.With.
//
//	t := pricing.Default()
//	p, ok := t.Lookup("claude-sonnet-4-5-20250929")
//	cost := p.Cost(pricing.Usage{Uncached: 1200, CacheRead: 180_000, CacheWrite5m: 4_000, Output: 800})
package pricing

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Provider names the API family a model is served by.
type Provider string

// Providers.
const (
	Anthropic Provider = "anthropic"
	OpenAI    Provider = "openai"
	// Google is Google's Gemini API (generativelanguage.googleapis.com).
	Google Provider = "google"
)

// implicitCache reports a provider whose prompt cache needs no
// breakpoints and bills no writes (OpenAI's, Gemini's implicit caching):
// Cache follows OpenAI's rules for it.
func (p Provider) implicitCache() bool { return p == OpenAI || p == Google }

// Prices are a model's list prices in USD per million tokens, and the
// parameters of its provider's prompt cache.
type Prices struct {
	Provider Provider `json:"provider"`
	// Input is the price of uncached input tokens; CacheRead of input
	// tokens read from the prompt cache; CacheWrite of tokens written to
	// it with the default lifetime (Anthropic's 5 minutes), CacheWrite1h
	// with the one-hour lifetime. OpenAI and Google (implicit caching)
	// cache without a write price: CacheWrite equals Input there.
	Input        float64 `json:"input"`
	CacheRead    float64 `json:"cache_read"`
	CacheWrite   float64 `json:"cache_write"`
	CacheWrite1h float64 `json:"cache_write_1h,omitempty"`
	Output       float64 `json:"output"`
	// MinCacheable is the shortest prefix, in tokens, the provider caches.
	MinCacheable int `json:"min_cacheable"`
	// TTL is how long a cached prefix lives after its last use (the
	// default lifetime; Anthropic's cache_control.ttl "1h" asks for an
	// hour).
	TTL time.Duration `json:"ttl"`
	// Long, when set, are the prices of a request whose prompt (its
	// input, cached tokens included) is over LongPrompt tokens: the
	// long-context prices of Gemini's Pro models ("prompts > 200k
	// tokens"). Cost applies them; Long's own Long is not read.
	LongPrompt int     `json:"long_prompt,omitempty"`
	Long       *Prices `json:"long,omitempty"`
}

// At returns the prices of a request whose prompt is prompt tokens: Long
// over LongPrompt, else p.
func (p Prices) At(prompt int) Prices {
	if p.Long != nil && prompt > p.LongPrompt {
		return *p.Long
	}
	return p
}

// Cost returns the price of a usage in USD, at the prices of its prompt's
// size (At).
func (p Prices) Cost(u Usage) float64 {
	p = p.At(u.Input())
	w1h := p.CacheWrite1h
	if w1h == 0 {
		w1h = p.CacheWrite
	}
	return (float64(u.Uncached)*p.Input + float64(u.CacheRead)*p.CacheRead + float64(u.CacheWrite5m)*p.CacheWrite +
		float64(u.CacheWrite1h)*w1h + float64(u.Output)*p.Output) / 1e6
}

// Table maps model names to prices. A key matches a model whose name
// starts with it; the longest matching key wins, so "claude-sonnet-4-5"
// prices "claude-sonnet-4-5-20250929".
type Table map[string]Prices

// Lookup returns the prices of model (its longest matching key), and
// whether any key matched. Names are matched in lower case, without a
// provider prefix ("anthropic/", "openai/") or a date suffix mattering.
func (t Table) Lookup(model string) (Prices, bool) {
	m := strings.ToLower(model)
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	best, found := "", false
	for k := range t {
		if strings.HasPrefix(m, k) && (!found || len(k) > len(best)) {
			best, found = k, true
		}
	}
	if !found {
		return Prices{}, false
	}
	return t[best], true
}

// With returns a copy of t with the entries of u added or replaced.
func (t Table) With(u Table) Table {
	out := make(Table, len(t)+len(u))
	for k, v := range t {
		out[k] = v
	}
	for k, v := range u {
		out[strings.ToLower(k)] = v
	}
	return out
}

// Models returns the table's keys, sorted.
func (t Table) Models() []string {
	keys := make([]string, 0, len(t))
	for k := range t {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Fallback returns the prices used for a model the table does not know,
// by provider: Claude Sonnet's for Anthropic, GPT-5's for OpenAI,
// Gemini 2.5 Pro's for Google.
func Fallback(p Provider) Prices {
	switch p {
	case OpenAI:
		return Default()["gpt-5"]
	case Google:
		return Default()["gemini-2.5-pro"]
	}
	return Default()["claude-sonnet-4"]
}

// anthropic returns Anthropic prices from the input and output prices:
// cache writes cost 1.25 times the input price (5-minute lifetime) or 2
// times (one hour), cache reads 0.1 times.
func anthropic(in, out float64, minCacheable int) Prices {
	return Prices{Provider: Anthropic, Input: in, CacheRead: in / 10, CacheWrite: in * 1.25, CacheWrite1h: in * 2, Output: out,
		MinCacheable: minCacheable, TTL: 5 * time.Minute}
}

// openai returns OpenAI prices: cached input at its own price, no write
// price, prefixes of 1,024 tokens or more cached for about ten minutes of
// inactivity (the documented 5–10 minutes, up to an hour off-peak).
func openai(in, cached, out float64) Prices {
	return Prices{Provider: OpenAI, Input: in, CacheRead: cached, CacheWrite: in, Output: out, MinCacheable: 1024, TTL: 10 * time.Minute}
}

// GeminiLongPrompt is the prompt size above which Gemini's Pro models
// bill a request at their long-context prices: "prompts > 200k tokens",
// counted per request, cached tokens included
// (ai.google.dev/gemini-api/docs/pricing).
const GeminiLongPrompt = 200_000

// GeminiCacheTTL is how long a Gemini implicitly cached prefix is taken to
// live after its last use. Google documents no lifetime for implicit
// caching: 5 minutes is a conservative guess, the shortest lifetime the
// other providers document.
const GeminiCacheTTL = 5 * time.Minute

// google returns Gemini prices: the Standard paid tier's text input and
// output (thinking billed as output), the cached input's price (implicit
// caching: no write price, no storage), the minimum prefix implicit
// caching reads from; long, when set, the long-context prices over
// GeminiLongPrompt tokens (the Pro models).
func google(in, cached, out float64, minCacheable int, long *Prices) Prices {
	p := Prices{Provider: Google, Input: in, CacheRead: cached, CacheWrite: in, Output: out, MinCacheable: minCacheable, TTL: GeminiCacheTTL}
	if long != nil {
		l := *long
		l.MinCacheable = minCacheable
		p.LongPrompt, p.Long = GeminiLongPrompt, &l
	}
	return p
}

// googleLong returns the long-context prices of a Gemini Pro model.
func googleLong(in, cached, out float64) *Prices {
	p := google(in, cached, out, 0, nil)
	return &p
}

// Default returns the list prices as published by Anthropic and OpenAI in
// November 2026 for the models coding agents use, and by Google in 2026
// for its Gemini models (ai.google.dev/gemini-api/docs/pricing; Gemini 3
// Pro Preview's are also Gemini 3.1 Pro Preview's; the implicit caching
// minimums from its caching page: 2,048 tokens for 2.5 Pro and Flash,
// Flash-Lite taken as Flash, 4,096 for the Gemini 3 models), in USD per
// million tokens. Override entries with Table.With.
func Default() Table {
	return Table{
		"claude-opus-4-5":   anthropic(5, 25, 4096),
		"claude-opus-4-6":   anthropic(5, 25, 4096),
		"claude-opus-4-1":   anthropic(15, 75, 1024),
		"claude-opus-4":     anthropic(15, 75, 1024),
		"claude-sonnet-4":   anthropic(3, 15, 1024),
		"claude-sonnet-4-5": anthropic(3, 15, 1024),
		"claude-sonnet-4-6": anthropic(3, 15, 2048),
		"claude-3-7-sonnet": anthropic(3, 15, 1024),
		"claude-haiku-4-5":  anthropic(1, 5, 4096),
		"claude-3-5-haiku":  anthropic(0.8, 4, 2048),
		"gpt-5":             openai(1.25, 0.125, 10),
		"gpt-5.1":           openai(1.25, 0.125, 10),
		"gpt-5-codex":       openai(1.25, 0.125, 10),
		"gpt-5-mini":        openai(0.25, 0.025, 2),
		"gpt-5-nano":        openai(0.05, 0.005, 0.4),
		"gpt-4.1":           openai(2, 0.5, 8),
		"gpt-4.1-mini":      openai(0.4, 0.1, 1.6),
		"gpt-4o":            openai(2.5, 1.25, 10),
		"gpt-4o-mini":       openai(0.15, 0.075, 0.6),
		"o3":                openai(2, 0.5, 8),
		"o4-mini":           openai(1.1, 0.275, 4.4),

		"gemini-2.5-pro":         google(1.25, 0.125, 10, 2048, googleLong(2.50, 0.25, 15)),
		"gemini-2.5-flash":       google(0.30, 0.03, 2.50, 2048, nil),
		"gemini-2.5-flash-lite":  google(0.10, 0.01, 0.40, 2048, nil),
		"gemini-3-pro-preview":   google(2, 0.20, 12, 4096, googleLong(4, 0.40, 18)),
		"gemini-3.1-pro-preview": google(2, 0.20, 12, 4096, googleLong(4, 0.40, 18)),
		"gemini-3-flash-preview": google(0.50, 0.05, 3, 4096, nil),
	}
}

// String writes the prices for people: "$3/M in, $0.30 read, $3.75 write, $15 out".
func (p Prices) String() string {
	return fmt.Sprintf("$%g/M in, $%g read, $%g write, $%g out", p.Input, p.CacheRead, p.CacheWrite, p.Output)
}
