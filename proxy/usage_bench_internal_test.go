package proxy

import (
	"strings"
	"testing"
)

// anthropicStream is a streamed answer of 2,000 text deltas and a signed
// thinking block, as Anthropic frames it.
func anthropicStream() []byte {
	var b strings.Builder
	b.WriteString("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"usage\":{\"input_tokens\":100,\"cache_read_input_tokens\":3000,\"cache_creation_input_tokens\":40,\"output_tokens\":1}}}\n\n")
	b.WriteString("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\"}}\n\n")
	b.WriteString("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"" + strings.Repeat("s", 400) + "\"}}\n\n")
	b.WriteString("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n")
	for range 2000 {
		b.WriteString("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"some words of the answer \"}}\n\n")
	}
	b.WriteString("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":7}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	return []byte(b.String())
}

// BenchmarkStreamWatch: the proxy's watch of a streamed answer (usage,
// thinking signatures), fed in the relay's 32 KiB reads.
func BenchmarkStreamWatch(b *testing.B) {
	s := anthropicStream()
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		var sc usageScanner
		for p := s; len(p) > 0; {
			n := min(len(p), 32<<10)
			sc.feed(p[:n], familyOf(APIAnthropic))
			p = p[n:]
		}
		if !sc.final || sc.usage.Output != 7 || len(sc.thinking) != 1 {
			b.Fatalf("usage %+v final %v thinking %d", sc.usage, sc.final, len(sc.thinking))
		}
	}
}
