// Package respbody writes OpenAI Responses request bodies of many
// repeated input items, for the tests that hold a cache's memory estimate
// to the heap (the proxy's decode cache, openaix's item cache). It is for
// tests only.
package respbody

import (
	"fmt"
	"strings"
)

// Calls is the i-th run of a reasoning item, a small function call and
// its output: the items a Codex session is mostly made of.
func Calls(i int) string {
	return fmt.Sprintf(`{"type":"reasoning","id":"rs_%d","summary":[],"encrypted_content":"e%d"},{"type":"function_call","id":"fc_%d","call_id":"c%d","name":"bash","arguments":"{\"command\":\"ls\"}","status":"completed"},{"type":"function_call_output","call_id":"c%d","output":"ok"}`, i, i, i, i, i)
}

// Parts is the i-th pair of message items: a user message of four text
// parts and the assistant's answer of one.
func Parts(i int) string {
	return fmt.Sprintf(`{"type":"message","role":"user","content":[{"type":"input_text","text":"step %d"},{"type":"input_text","text":"then"},{"type":"input_text","text":"and"},{"type":"input_text","text":"done"}]},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"ok %d"}]}`, i, i)
}

// Body returns a Responses request (store false, so that the client sends
// the whole history) of a first user message and the items of items(0)
// to items(n-1).
func Body(n int, items func(i int) string) []byte {
	var b strings.Builder
	b.WriteString(`{"model":"gpt-5","store":false,"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"start"}]}`)
	for i := range n {
		b.WriteByte(',')
		b.WriteString(items(i))
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}
