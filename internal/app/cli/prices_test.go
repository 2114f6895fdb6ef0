package cli

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentctx/agentctx/pricing"
)

func TestReadPrices(t *testing.T) {
	path := filepath.Join(t.TempDir(), "prices.json")
	os.WriteFile(path, []byte(`{"claude-sonnet-4-5":{"input":2,"output":10},"My-Model":{"provider":"openai","input":1,"cache_read":0.1,"output":4,"ttl":"1h"}}`), 0o644)
	tb, err := readPrices(path)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := tb.Lookup("claude-sonnet-4-5-20250929")
	if s.Input != 2 || s.Output != 10 || s.CacheRead != 0.3 || s.Provider != pricing.Anthropic {
		t.Errorf("sonnet %+v: want the given input and output over the built-in entry", s)
	}
	m, ok := tb.Lookup("my-model-2")
	if !ok || m.Provider != pricing.OpenAI || m.Input != 1 || m.CacheRead != 0.1 || m.TTL != time.Hour || m.MinCacheable != 1024 {
		t.Errorf("my-model %+v", m)
	}
	if _, ok := tb.Lookup("gpt-5"); !ok {
		t.Error("the built-in entries are gone")
	}
	os.WriteFile(path, []byte(`{"x":{"input":-1}}`), 0o644)
	if _, err := readPrices(path); err == nil {
		t.Error("a negative price was accepted")
	}
}
