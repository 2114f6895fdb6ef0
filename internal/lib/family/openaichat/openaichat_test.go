package openaichat_test

import (
	"testing"

	"github.com/agentctx/agentctx/internal/lib/family/familytest"
	"github.com/agentctx/agentctx/internal/lib/family/openaichat"
	"github.com/agentctx/agentctx/pricing"
)

func TestFamily(t *testing.T) {
	usage := `"usage":{"prompt_tokens":130,"completion_tokens":42,"prompt_tokens_details":{"cached_tokens":100}}`
	whole := []byte(`{"choices":[{"message":{"role":"assistant","content":"Hello"}}],` + usage + `}`)
	familytest.Run(t, openaichat.Family{}, familytest.Fixtures{
		Stream: [][]byte{
			[]byte(`{"choices":[{"delta":{"content":"Hi"}}]}`),
			[]byte(`{"choices":[],` + usage + `}`),
			[]byte(`[DONE]`),
		},
		Whole:       whole,
		Usage:       pricing.OpenAIUsage(130, 100, 42),
		Editable:    [][]byte{[]byte(`{"model":"m","messages":[]}`)},
		Answer:      whole,
		AnswerParts: []string{"Hello"},
	})
}
