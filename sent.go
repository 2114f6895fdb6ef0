package agentctx

import (
	"encoding/json"

	"github.com/agentctx/agentctx/internal/base/rawjson"
)

// SentString returns the JSON string token a tool result's content was
// sent as, when decoding it lost something: a lone surrogate escape
// (\ud800, which JSON allows and JavaScript strings hold) decodes to
// U+FFFD, so the result's Content is not what was sent, and a store that
// must give the result back as sent keeps the token instead. blk is the
// tool_result block's index in m, or -1 for a role "tool" message (as in
// ToolResult). It returns false for any other content: a string decoded
// without loss, blocks, content set by code.
func SentString(m Message, blk int) (json.RawMessage, bool) {
	ms, c := m.members, m.Content
	if blk >= 0 {
		if blk >= len(m.Content.blocks) {
			return nil, false
		}
		b := &m.Content.blocks[blk]
		ms, c = b.members, b.Content
	}
	if c.kind != ContentText {
		return nil, false
	}
	mb := findMember(ms, "content")
	if mb == nil {
		return nil, false
	}
	tok := mb.token()
	if rawjson.Kind(tok) != '"' || !rawjson.HasLoneSurrogate(tok) || rawjson.Unquote(tok) != c.str() {
		return nil, false
	}
	return json.RawMessage(append([]byte(nil), tok...)), true
}
