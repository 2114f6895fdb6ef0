package responses_test

import (
	"testing"

	"github.com/agentctx/agentctx/internal/lib/family/familytest"
	"github.com/agentctx/agentctx/internal/lib/family/responses"
	"github.com/agentctx/agentctx/pricing"
)

func TestFamily(t *testing.T) {
	usage := `"usage":{"input_tokens":130,"output_tokens":42,"input_tokens_details":{"cached_tokens":100}}`
	whole := []byte(`{"output":[{"type":"reasoning"},{"type":"message","content":[{"type":"output_text","text":"Hello"}]}],` + usage + `}`)
	familytest.Run(t, responses.Family{}, familytest.Fixtures{
		Stream: [][]byte{
			[]byte(`{"type":"response.created","response":{"id":"r","usage":null}}`),
			[]byte(`{"type":"response.output_text.delta","delta":"Hi"}`),
			[]byte(`{"type":"response.completed","response":{"id":"r",` + usage + `}}`),
		},
		Whole:    whole,
		Usage:    pricing.OpenAIUsage(130, 100, 42),
		Editable: [][]byte{[]byte(`{"store":false,"input":[]}`), []byte(`{"store":false,"previous_response_id":null,"input":[]}`)},
		Uneditable: [][]byte{[]byte(`{"input":[]}`), []byte(`{"store":true,"input":[]}`),
			[]byte(`{"store":false,"previous_response_id":"resp_1","input":[]}`)},
		Answer:      whole,
		AnswerParts: []string{"Hello"},
	})
}
