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
)

// Prices are a model's list prices in USD per million tokens, and the
// parameters of its provider's prompt cache.
type Prices struct {
	Provider Provider `json:"provider"`
	// Input is the price of uncached input tokens; CacheRead of input
	// tokens read from the prompt cache; CacheWrite of tokens written to
	// it with the default lifetime (Anthropic's 5 minutes), CacheWrite1h
	// with the one-hour lifetime. OpenAI caches without a write price:
	// CacheWrite equals Input there.
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
}

// Cost returns the price of a usage in USD.
func (p Prices) Cost(u Usage) float64 {
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
// by provider: Claude Sonnet's for Anthropic, GPT-5's for OpenAI.
func Fallback(p Provider) Prices {
	if p == OpenAI {
		return Default()["gpt-5"]
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

// Default returns the list prices as published by Anthropic and OpenAI in
// November 2026 for the models coding agents use, in USD per million
// tokens. Override entries with Table.With.
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
	}
}

// String writes the prices for people: "$3/M in, $0.30 read, $3.75 write, $15 out".
func (p Prices) String() string {
	return fmt.Sprintf("$%g/M in, $%g read, $%g write, $%g out", p.Input, p.CacheRead, p.CacheWrite, p.Output)
}
