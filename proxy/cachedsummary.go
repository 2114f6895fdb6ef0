package proxy

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/internal/base/rawjson"
)

// cachedSummaryBody returns the body of a summary request that reuses the
// provider's prompt cache: prefix, the body last forwarded for the
// session (its system prompt, tools, messages and cache breakpoints, as
// the provider cached them), with the summary instruction appended at the
// end (a text block after the last user message's content, or a user
// message of its own) and streaming off. Everything before the instruction
// is prefix's own bytes, so the provider reads it from its cache instead
// of the uncached prompt a rendered conversation would be.
func cachedSummaryBody(api API, prefix []byte, r compact.Request) ([]byte, error) {
	ms, err := rawjson.Members(prefix)
	if err != nil {
		return nil, err
	}
	list := "messages"
	if api == APIResponses {
		list = "input"
	}
	instr := summaryInstruction(r)
	out := []byte{'{'}
	found := false
	for _, m := range ms {
		if m.Key == "stream" || m.Key == "stream_options" {
			continue // written below: one answer, not a stream
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = rawjson.AppendString(out, m.Key)
		out = append(out, ':')
		if m.Key != list {
			out = append(out, m.Value...)
			continue
		}
		found = true
		v, err := appendInstruction(api, m.Value, instr)
		if err != nil {
			return nil, err
		}
		out = append(out, v...)
	}
	if !found {
		return nil, fmt.Errorf("the forwarded body has no %q", list)
	}
	out = append(out, `,"stream":false}`...)
	return out, nil
}

// appendInstruction returns the list of messages (or Responses input
// items) with the instruction added at its end.
func appendInstruction(api API, list []byte, instr string) ([]byte, error) {
	els, err := rawjson.Elements(list)
	if err != nil || len(els) == 0 {
		return nil, errors.New("the forwarded body has no messages")
	}
	text := rawjson.AppendString(nil, instr)
	var add []byte
	switch api {
	case APIAnthropic:
		last := els[len(els)-1]
		if stringOf(rawjson.Get(last, "role")) == "user" {
			// The instruction goes after the last user message's blocks:
			// the blocks before it, and their breakpoint, are unchanged.
			if next, ok := withTextBlock(last, text); ok {
				return replaceLast(els, next), nil
			}
		}
		add = fmt.Appendf(nil, `{"role":"user","content":[{"type":"text","text":%s}]}`, text)
	case APIChat:
		add = fmt.Appendf(nil, `{"role":"user","content":%s}`, text)
	default:
		add = fmt.Appendf(nil, `{"type":"message","role":"user","content":[{"type":"input_text","text":%s}]}`, text)
	}
	last := append(append([]byte{}, els[len(els)-1]...), ',')
	return replaceLast(els, append(last, add...)), nil
}

// withTextBlock returns an Anthropic message with a text block added after
// its content's blocks; ok is false for content that is not a list.
func withTextBlock(msg, text []byte) ([]byte, bool) {
	content := rawjson.Get(msg, "content")
	if rawjson.Kind(content) != '[' {
		return nil, false
	}
	blocks, err := rawjson.Elements(content)
	if err != nil {
		return nil, false
	}
	at := offsetOf(msg, content)
	if at < 0 {
		return nil, false
	}
	var nc []byte
	nc = append(nc, '[')
	for i, b := range blocks {
		if i > 0 {
			nc = append(nc, ',')
		}
		nc = append(nc, b...)
	}
	if len(blocks) > 0 {
		nc = append(nc, ',')
	}
	nc = fmt.Appendf(nc, `{"type":"text","text":%s}]`, text)
	out := append([]byte{}, msg[:at]...)
	out = append(out, nc...)
	out = append(out, msg[at+len(content):]...)
	return out, true
}

// replaceLast returns the JSON array of els with its last element
// replaced by last (which may be two elements joined by a comma).
func replaceLast(els [][]byte, last []byte) []byte {
	var out []byte
	out = append(out, '[')
	for _, e := range els[:len(els)-1] {
		out = append(out, e...)
		out = append(out, ',')
	}
	out = append(out, last...)
	return append(out, ']')
}

// offsetOf returns where sub, a subslice of b, starts in b, or -1: the
// difference of their capacities, checked.
func offsetOf(b, sub []byte) int {
	off := cap(b) - cap(sub)
	if len(sub) == 0 || off < 0 || off >= len(b) || &b[off] != &sub[0] {
		return -1
	}
	return off
}

// summaryInstruction asks for the summary of the conversation above,
// through the last message of r (the messages after it stay as they are).
func summaryInstruction(r compact.Request) string {
	where := "its most recent messages"
	if n := len(r.Messages); n > 0 {
		where = describeMessage(r.Messages[n-1])
	}
	prompt := strings.Replace(compact.SummaryPrompt, "Summarize the conversation below.",
		"Summarize the conversation above, from its first message through "+where+
			"; leave out everything after that point (those messages are kept as they are).", 1)
	return "[agentctx: context compaction] This is not a request to continue the task. " +
		compact.SystemPrompt + "\n\n" + prompt + "\n\nAnswer with the summary as text only: call no tool."
}

// describeMessage names a message so a model finds it in the conversation:
// the tool result or call it carries, else its first words.
func describeMessage(m agentctx.Message) string {
	for r := range agentctx.ToolResults([]agentctx.Message{m}) {
		return "the result of tool call " + r.ID
	}
	for u := range agentctx.ToolUses([]agentctx.Message{m}) {
		return "the tool call " + u.ID
	}
	text := strings.Join(strings.Fields(m.Content.AsText()), " ")
	if utf8.RuneCountInString(text) > 80 {
		text = string([]rune(text)[:80]) + "…"
	}
	return "the " + string(m.Role) + " message that begins " + fmt.Sprintf("%q", text)
}
