package proxy

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agentctx/agentctx/pricing"
)

// TestStreamWatchFastPath: the events the watcher passes over unparsed are
// only those that cannot matter: a stream reads the same whether its events
// are written as the API writes them (the type first, read without
// parsing) or otherwise (parsed whole).
func TestStreamWatchFastPath(t *testing.T) {
	events := []string{
		`{"type":"message_start","message":{"content":[{"type":"thinking","thinking":"","signature":"s0"}],"usage":{"input_tokens":5,"output_tokens":1}}}`,
		`{"type":"content_block_start","index":1,"content_block":{"type":"redacted_thinking","data":"r1"}}`,
		`{"type":"content_block_stop","index":1}`,
		`{"type":"content_block_start","index":2,"content_block":{"type":"thinking","thinking":""}}`,
		`{"type":"content_block_delta","index":2,"delta":{"type":"thinking_delta","thinking":"signature_delta\" is a word"}}`,
		`{"type":"content_block_delta","index":2,"delta":{"type":"signature_delta","signature":"s2a"}}`,
		`{"type":"content_block_delta","index":2,"delta":{"type":"signature_delta","signature":"s2b"}}`,
		`{"type":"content_block_stop","index":2}`,
		`{"type":"content_block_start","index":3,"content_block":{"type":"compaction","content":"sum"}}`,
		`{"type":"content_block_delta","index":3,"delta":{"type":"compaction_delta","content":"mary","encrypted_content":"e"}}`,
		`{"type":"content_block_stop","index":3}`,
		`{"type":"content_block_delta","index":4,"delta":{"type":"text_delta","text":"hi"}}`,
		`{"type":"ping"}`,
		`{"type":"message_delta","usage":{"output_tokens":9}}`,
		`{"type":"message_stop"}`,
	}
	read := func(rewrite func(string) string) *usageScanner {
		var b strings.Builder
		for _, e := range events {
			b.WriteString("data: " + rewrite(e) + "\n\n")
		}
		var sc usageScanner
		sc.feed([]byte(b.String()), familyOf(APIAnthropic))
		return &sc
	}
	fast := read(func(e string) string { return e })
	for name, rewrite := range map[string]func(string) string{
		"spaced":  func(e string) string { return strings.Replace(e, `{"type":"`, `{ "type": "`, 1) },
		"escaped": func(e string) string { return fmt.Sprintf(`{"type":"\u%04x`, e[9]) + e[10:] },
		"type last": func(e string) string {
			i := strings.Index(e[9:], `"`) + 9
			typ, rest := e[9:i], strings.TrimPrefix(e[i+1:], ",")
			if rest == "}" {
				return e
			}
			return "{" + rest[:len(rest)-1] + `,"type":"` + typ + `"}`
		},
	} {
		slow := read(rewrite)
		if !slices.Equal(fast.thinking, slow.thinking) || string(fast.compaction) != string(slow.compaction) || fast.usage != slow.usage || fast.final != slow.final {
			t.Errorf("%s: thinking %q compaction %s usage %+v; as written: %q %s %+v", name, slow.thinking, slow.compaction, slow.usage, fast.thinking, fast.compaction, fast.usage)
		}
	}
	if want := []string{"s0", "r1", "s2as2b"}; !slices.Equal(fast.thinking, want) || string(fast.compaction) != `{"type":"compaction","content":"summary","encrypted_content":"e"}` ||
		fast.usage != (pricing.Usage{Uncached: 5, Output: 9}) || !fast.final {
		t.Errorf("thinking %q compaction %s usage %+v final %v", fast.thinking, fast.compaction, fast.usage, fast.final)
	}
}
