package anthropic_test

import (
	"testing"

	"github.com/agentctx/agentctx/internal/lib/family/anthropic"
	"github.com/agentctx/agentctx/internal/lib/family/familytest"
	"github.com/agentctx/agentctx/pricing"
)

func TestFamily(t *testing.T) {
	whole := []byte(`{"type":"message","content":[{"type":"text","text":"Hello"},{"type":"tool_use","id":"t"},{"type":"text","text":"world"}],` +
		`"usage":{"input_tokens":10,"cache_read_input_tokens":100,"cache_creation_input_tokens":20,"output_tokens":42}}`)
	familytest.Run(t, anthropic.Family{}, familytest.Fixtures{
		Stream: [][]byte{
			[]byte(`{"type":"message_start","message":{"id":"m","usage":{"input_tokens":10,"cache_read_input_tokens":100,"cache_creation_input_tokens":20,"output_tokens":1}}}`),
			[]byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}`),
			[]byte(`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":42}}`),
			[]byte(`{"type":"message_stop"}`),
		},
		Whole:       whole,
		Usage:       pricing.AnthropicUsage(10, 100, 20, 0, 42),
		Editable:    [][]byte{[]byte(`{"model":"m","messages":[]}`)},
		Answer:      whole,
		AnswerParts: []string{"Hello", "world"},
	})
}
