package proxy_test

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctx/agentctx/internal/testkit/fakeupstream"
	"github.com/agentctx/agentctx/proxy"
)

// A Responses session that asks for extended prompt caching
// ("prompt_cache_retention": "24h") keeps its cache through a gap of
// minutes: the proxy does not take the cache for cold and does not sweep
// its old results into references (a rewrite it would pay for), as it
// does after the same gap with the in-memory cache's minutes.
func TestExtendedRetentionKeepsTheCacheWarm(t *testing.T) {
	for _, tc := range []struct {
		retention string
		swept     bool
	}{{"", true}, {`"in_memory"`, true}, {`"24h"`, false}} {
		t.Run(tc.retention, func(t *testing.T) {
			clock := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
			var mu sync.Mutex
			now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
			e := pipelineEngine(t, proxy.PipelineOptions{Now: now})
			fake := fakeupstream.New(fakeupstream.Options{Now: now})
			base := newProxy(t, fake, e)
			items := []string{`{"type":"message","role":"user","content":[{"type":"input_text","text":"read the files"}]}`}
			body := func() string {
				b := `{"model":"gpt-5-codex","store":false,"prompt_cache_key":"s-ret","tools":[{"type":"function","name":"read_file","parameters":{"type":"object"}}],"input":[` + strings.Join(items, ",") + `]`
				if tc.retention != "" {
					b += `,"prompt_cache_retention":` + tc.retention
				}
				return b + `}`
			}
			add := func(i int) {
				items = append(items,
					fmt.Sprintf(`{"type":"function_call","name":"read_file","arguments":"{\"path\":\"f%d.go\"}","call_id":"c%d"}`, i, i),
					fmt.Sprintf(`{"type":"function_call_output","call_id":"c%d","output":%q}`, i, strings.Repeat(fmt.Sprintf("line of file %d\n", i), 700)))
			}
			for i := range 7 {
				add(i)
			}
			send := func() string {
				resp := post(t, base+"/v1/responses", body(), nil)
				data, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					t.Fatalf("status %d: %s", resp.StatusCode, data)
				}
				recs := fake.Records()
				return string(recs[len(recs)-1].Body)
			}
			if first := send(); !strings.Contains(first, strings.Repeat("line of file 0\\n", 700)) {
				t.Fatalf("the first request did not send the oldest result whole:\n%.400s", first)
			}
			mu.Lock()
			clock = clock.Add(20 * time.Minute) // past the in-memory cache's lifetime
			mu.Unlock()
			add(7)
			sent := send()
			whole := strings.Contains(sent, strings.Repeat("line of file 0\\n", 700))
			if whole == tc.swept {
				t.Fatalf("retention %s: the oldest result sent whole %v after 20 idle minutes, want %v", tc.retention, whole, !tc.swept)
			}
		})
	}
}
