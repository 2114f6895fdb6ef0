package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/agentctx/agentctx/pricing"
)

// pricesFlagHelp documents --prices.
const pricesFlagHelp = `JSON file of list prices, USD per million tokens, by model name prefix, over the built-in table: ` +
	`{"claude-sonnet-4-5":{"input":3,"output":15}, "my-model":{"provider":"openai","input":1,"cache_read":0.1,"output":4}}; ` +
	`fields: provider, input, cache_read, cache_write, cache_write_1h, output, min_cacheable, ttl ("5m"); ` +
	`a field left out keeps the built-in entry's (or the provider's fallback's)`

// readPrices returns the default price table with the entries of the JSON
// file at path laid over it ("" means the default table).
func readPrices(path string) (pricing.Table, error) {
	t := pricing.Default()
	if path == "" {
		return t, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &fileError{prefix: "--prices", err: err}
	}
	var entries map[string]map[string]json.RawMessage
	if err := json.Unmarshal(data, &entries); err != nil {
		return nil, usagef("--prices %s: %v", path, err)
	}
	over := pricing.Table{}
	for model, fields := range entries {
		p, ok := t.Lookup(model)
		if !ok {
			var prov pricing.Provider
			json.Unmarshal(fields["provider"], &prov)
			p = pricing.Fallback(prov)
			if prov != "" {
				p.Provider = prov
			}
		}
		if raw, ok := fields["ttl"]; ok && len(raw) > 0 && raw[0] == '"' {
			var s string
			json.Unmarshal(raw, &s)
			d, err := time.ParseDuration(s)
			if err != nil {
				return nil, usagef("--prices %s: %s: ttl: %v", path, model, err)
			}
			fields["ttl"] = json.RawMessage(fmt.Sprint(int64(d)))
		}
		b, _ := json.Marshal(fields)
		if err := json.Unmarshal(b, &p); err != nil {
			return nil, usagef("--prices %s: %s: %v", path, model, err)
		}
		if p.Input < 0 || p.CacheRead < 0 || p.CacheWrite < 0 || p.CacheWrite1h < 0 || p.Output < 0 {
			return nil, usagef("--prices %s: %s: a negative price", path, model)
		}
		over[strings.ToLower(model)] = p
	}
	return t.With(over), nil
}
